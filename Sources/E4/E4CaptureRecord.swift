/// One record of a capture (SPEC §6.4), pointing into the bytes it was read from.
public struct E4CaptureRecord: Hashable, Sendable {
    /// Where the record starts in the capture.
    public var offset: Int
    /// Arrival time, µs since 1970.
    public var arrivalMicros: UInt64
    /// The characteristic's 16-bit UUID.
    public var characteristic: UInt16
    /// The payload's byte range in the capture.
    public var payload: Range<Int>

    public init(offset: Int, arrivalMicros: UInt64, characteristic: UInt16, payload: Range<Int>) {
        self.offset = offset
        self.arrivalMicros = arrivalMicros
        self.characteristic = characteristic
        self.payload = payload
    }

    /// Where the next record starts.
    public var nextOffset: Int { self.payload.upperBound }

    /// The stream the characteristic carries, if any.
    public var stream: E4Stream? { E4Stream(characteristic16: self.characteristic) }
}
