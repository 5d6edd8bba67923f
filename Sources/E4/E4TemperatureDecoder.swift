/// Decodes the skin-temperature stream (3EA6) and follows its 32-bit flow counter.
public struct E4TemperatureDecoder: Sendable {
    /// Length, flow counter and statistics.
    private var gate = E4PacketGate(width: E4Temperature.counterWidth)
    /// The flow counter (32 bits).
    public var flow: E4FlowTracker { self.gate.flow }
    /// What this decoder has seen.
    public var statistics: E4StreamStatistics { self.gate.statistics }

    /// A decoder with no history.
    public init() {}

    /// Forgets the flow counter (on connect and reconnect); statistics are kept.
    public mutating func reset() {
        self.gate.reset()
    }

    /// Decodes one notification into `packet`.
    ///
    /// Content is checked before the counter is accepted, so a corrupt packet cannot move the stream's counter.
    ///
    /// - Parameters:
    ///   - bytes: The notification, exactly 20 bytes.
    ///   - packet: Receives counter, raw values and temperatures; untouched when this throws.
    /// - Returns: How the packet follows the previous one.
    /// - Throws: ``E4DecodeError/wrongLength(expected:actual:)``, ``E4DecodeError/invalidContent(_:)`` for a
    ///   raw value outside ``E4Temperature/validRaw``, or ``E4DecodeError/duplicate(counter:)``.
    public mutating func decode(_ bytes: RawSpan, into packet: inout E4TemperaturePacket) throws(E4DecodeError)
        -> E4Continuity
    {
        try self.gate.checkLength(bytes, E4Temperature.packetLength)
        for sample in 0..<E4Temperature.samplesPerPacket {
            let raw = bytes.e4UInt16LE(2 * sample)
            guard E4Temperature.validRaw.contains(raw) else {
                throw self.gate.invalid(.temperatureRaw(index: sample, raw: raw))
            }
        }
        let counter = bytes.e4UInt32LE(E4Temperature.counterOffset)
        let continuity = try self.gate.classify(counter)
        packet.counter = counter
        for sample in 0..<E4Temperature.samplesPerPacket {
            let raw = bytes.e4UInt16LE(2 * sample)
            packet.raw[sample] = raw
            packet.celsius[sample] = E4Temperature.celsius(raw: raw)
        }
        self.gate.accept(counter, continuity)
        return continuity
    }

    /// ``decode(_:into:)`` for callers holding an `UnsafeRawBufferPointer`.
    public mutating func decode(_ bytes: UnsafeRawBufferPointer, into packet: inout E4TemperaturePacket)
        throws(E4DecodeError) -> E4Continuity
    {
        try self.decode(bytes.bytes, into: &packet)
    }
}
