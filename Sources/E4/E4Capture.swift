/// The raw notification capture format (SPEC §6.4): a plain concatenation of records, each
///
/// | bytes | field |
/// | --- | --- |
/// | 8 | arrival time, µs since 1970, little-endian `UInt64` |
/// | 2 | characteristic, 16-bit UUID, little-endian `UInt16` |
/// | 2 | payload length, little-endian `UInt16` |
/// | n | the notification's bytes |
///
/// No file header and no checksum: a capture is evidence for correcting the profile, written by
/// `empalinkctl capture` and read by `decode` and the simulator's replay.
public enum E4Capture {
    /// Bytes before the payload.
    public static let headerLength = 12
    /// The longest payload accepted: 512 bytes, the longest attribute value ATT allows. A longer length field can
    /// only be corruption, so the reader stops there rather than skipping over kilobytes of garbage.
    public static let maximumPayloadLength = 512

    /// Appends one record to `buffer`.
    ///
    /// - Parameters:
    ///   - arrivalMicros: Arrival time, µs since 1970.
    ///   - characteristic: The characteristic's 16-bit UUID.
    ///   - payload: The notification's bytes.
    ///   - buffer: The capture being written; grows by ``headerLength`` + payload length.
    /// - Throws: ``E4CaptureError/payloadTooLong(length:)`` past ``maximumPayloadLength``; `buffer` is unchanged.
    public static func append(
        arrivalMicros: UInt64,
        characteristic: UInt16,
        payload: RawSpan,
        to buffer: inout [UInt8]
    ) throws(E4CaptureError) {
        let length = payload.byteCount
        guard length <= Self.maximumPayloadLength else { throw .payloadTooLong(length: length) }
        for shift in stride(from: 0, to: 64, by: 8) {
            buffer.append(UInt8(truncatingIfNeeded: arrivalMicros >> UInt64(shift)))
        }
        buffer.append(UInt8(truncatingIfNeeded: characteristic))
        buffer.append(UInt8(truncatingIfNeeded: characteristic >> 8))
        buffer.append(UInt8(truncatingIfNeeded: length))
        buffer.append(UInt8(truncatingIfNeeded: length >> 8))
        for index in 0..<length {
            buffer.append(payload.e4Byte(index))
        }
    }

    /// ``append(arrivalMicros:characteristic:payload:to:)`` for callers holding an `UnsafeRawBufferPointer`.
    public static func append(
        arrivalMicros: UInt64,
        characteristic: UInt16,
        payload: UnsafeRawBufferPointer,
        to buffer: inout [UInt8]
    ) throws(E4CaptureError) {
        try Self.append(arrivalMicros: arrivalMicros, characteristic: characteristic, payload: payload.bytes,
                        to: &buffer)
    }

    /// Reads the record starting at `offset`, or `nil` when `offset` is exactly the end.
    ///
    /// Usable on a partial file: a ``E4CaptureError/truncated(offset:needed:available:)`` error means "read more
    /// and try again at the same offset" while the file is still growing, and "torn tail" once it is complete.
    ///
    /// - Parameters:
    ///   - bytes: The capture, or a prefix of it.
    ///   - offset: Where a record starts (0, or a previous record's ``E4CaptureRecord/nextOffset``).
    /// - Returns: The record, its payload as a byte range into `bytes`.
    /// - Throws: ``E4CaptureError`` with the record's offset; never traps, whatever the bytes.
    public static func record(in bytes: RawSpan, at offset: Int) throws(E4CaptureError) -> E4CaptureRecord? {
        let total = bytes.byteCount
        guard offset >= 0, offset <= total else { throw .offsetOutOfRange(offset: offset, size: total) }
        let available = total - offset
        if available == 0 { return nil }
        guard available >= Self.headerLength else {
            throw .truncated(offset: offset, needed: Self.headerLength, available: available)
        }
        let arrival = bytes.e4UInt64LE(offset)
        let characteristic = bytes.e4UInt16LE(offset + 8)
        let length = Int(bytes.e4UInt16LE(offset + 10))
        guard length <= Self.maximumPayloadLength else { throw .badLength(offset: offset, length: length) }
        guard available - Self.headerLength >= length else {
            throw .truncated(offset: offset, needed: Self.headerLength + length, available: available)
        }
        let start = offset + Self.headerLength
        return E4CaptureRecord(
            offset: offset,
            arrivalMicros: arrival,
            characteristic: characteristic,
            payload: start..<(start + length)
        )
    }
}
