/// Decodes battery notifications and the value read at connect (3EB3). Battery has no flow counter.
public struct E4BatteryDecoder: Sendable {
    /// What this decoder has seen (only ``E4StreamStatistics/packets`` and ``E4StreamStatistics/decodeErrors``).
    public private(set) var statistics = E4StreamStatistics()

    /// A decoder with no history.
    public init() {}

    /// Decodes one battery value.
    ///
    /// - Parameter bytes: The value, at least 1 byte.
    /// - Returns: The percentage and level.
    /// - Throws: ``E4DecodeError/tooShort(minimum:actual:)`` for an empty value, or
    ///   ``E4DecodeError/invalidContent(_:)`` with ``E4InvalidContent/batteryPercent(_:)`` above 100.
    public mutating func decode(_ bytes: RawSpan) throws(E4DecodeError) -> E4BatteryReading {
        guard bytes.byteCount >= E4Battery.minimumLength else {
            self.statistics.decodeErrors &+= 1
            throw .tooShort(minimum: E4Battery.minimumLength, actual: bytes.byteCount)
        }
        let percent = bytes.e4Byte(0)
        guard percent <= 100 else {
            self.statistics.decodeErrors &+= 1
            throw .invalidContent(.batteryPercent(percent))
        }
        self.statistics.packets &+= 1
        return E4BatteryReading(percent: percent, level: E4Battery.level(percent: percent))
    }

    /// ``decode(_:)`` for callers holding an `UnsafeRawBufferPointer`.
    public mutating func decode(_ bytes: UnsafeRawBufferPointer) throws(E4DecodeError) -> E4BatteryReading {
        try self.decode(bytes.bytes)
    }
}
