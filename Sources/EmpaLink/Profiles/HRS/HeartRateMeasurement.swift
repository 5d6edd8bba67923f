/// One Heart Rate Measurement value (characteristic 0x2A37 of the Bluetooth SIG Heart Rate Service, HRS 1.0 and the
/// GATT Specification Supplement), parsed in place: the fixed fields are decoded, the RR intervals stay in the
/// caller's bytes and are read with ``rrInterval(_:in:)``. Nothing is copied or allocated.
///
/// Layout: byte 0 flags — bit 0 heart-rate format (0: uint8, 1: uint16 LE), bit 1 sensor contact detected, bit 2
/// sensor contact supported, bit 3 energy expended present (uint16 LE, kJ), bit 4 RR intervals present; bits 5–7
/// reserved (ignored). Then the heart rate, the energy expended if flagged, then zero or more uint16 LE RR intervals
/// in 1/1024 s, oldest first.
///
/// ``parse(_:)`` is the entry point for fuzzing: a pure function of the bytes that returns or throws a typed
/// ``HeartRateMeasurementError`` for every input, never traps.
public struct HeartRateMeasurement: Sendable, Equatable {
    /// Whether the sensor reports skin contact, where it can tell (flags bits 1–2).
    public enum Contact: Sendable, Equatable {
        /// The sensor does not report contact (bit 2 clear).
        case notSupported
        case detected
        case notDetected
    }

    public var flags: UInt8
    /// Beats per minute, as the device reports it.
    public var heartRate: UInt16
    public var contact: Contact
    /// Energy expended since the last reset, kJ, when flagged.
    public var energyExpended: UInt16?
    /// How many RR intervals follow (0 when bit 4 is clear).
    public var rrCount: Int
    /// The byte offset of the first RR interval.
    public var rrOffset: Int

    /// One RR tick: 1/1024 s.
    public static let rrUnit = 1.0 / 1024

    /// Parses one notification.
    ///
    /// - Parameter bytes: the characteristic's value.
    /// - Returns: the decoded header; the RR intervals are read from `bytes` with ``rrInterval(_:in:)``.
    /// - Throws: ``HeartRateMeasurementError`` when the length does not fit the flags.
    /// - Complexity: O(1); the RR values are not visited.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(HeartRateMeasurementError)
        -> HeartRateMeasurement
    {
        guard bytes.count > 0 else { throw .empty }
        let flags = bytes[0]
        let wideRate = flags & 0x01 != 0
        let hasEnergy = flags & 0x08 != 0
        let hasRR = flags & 0x10 != 0
        let header = 1 + (wideRate ? 2 : 1) + (hasEnergy ? 2 : 0)
        guard bytes.count >= header else { throw .truncated(needed: header, available: bytes.count) }
        let heartRate = wideRate ? Self.uint16(bytes, at: 1) : UInt16(bytes[1])
        let energy: UInt16? = hasEnergy ? Self.uint16(bytes, at: wideRate ? 3 : 2) : nil
        let rest = bytes.count - header
        if !hasRR {
            guard rest == 0 else { throw .unexpectedBytes(count: rest) }
        } else {
            guard rest % 2 == 0 else { throw .oddRRBytes(count: rest) }
        }
        let contact: Contact = flags & 0x04 == 0 ? .notSupported : flags & 0x02 != 0 ? .detected : .notDetected
        return HeartRateMeasurement(flags: flags, heartRate: heartRate, contact: contact, energyExpended: energy,
                                    rrCount: rest / 2, rrOffset: header)
    }

    /// The RR interval at `index` (0 is the oldest) in 1/1024 s, read from the `bytes` this measurement was parsed
    /// from; 0 for an index out of range.
    public func rrInterval(_ index: Int, in bytes: UnsafeRawBufferPointer) -> UInt16 {
        let offset = self.rrOffset + 2 * index
        guard index >= 0, index < self.rrCount, offset + 1 < bytes.count else { return 0 }
        return Self.uint16(bytes, at: offset)
    }

    static func uint16(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt16 {
        UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }
}

/// Why a Heart Rate Measurement value was rejected: its length does not fit its flags.
public enum HeartRateMeasurementError: Error, Sendable, Equatable {
    /// No bytes at all.
    case empty
    /// Shorter than the flags' fixed fields.
    case truncated(needed: Int, available: Int)
    /// RR intervals flagged, but the bytes after the fixed fields are not a whole number of uint16 values.
    case oddRRBytes(count: Int)
    /// No RR intervals flagged, yet bytes follow the fixed fields.
    case unexpectedBytes(count: Int)
}
