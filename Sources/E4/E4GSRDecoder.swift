/// Decodes the GSR stream (3EA8) and follows its 16-bit flow counter.
public struct E4GSRDecoder: Sendable {
    /// Length, flow counter and statistics.
    private var gate = E4PacketGate(width: E4GSR.counterWidth)
    /// The flow counter (16 bits).
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
    /// - Parameters:
    ///   - bytes: The notification, exactly 20 bytes.
    ///   - packet: Receives counter, codes and conductances; untouched when this throws.
    /// - Returns: How the packet follows the previous one.
    /// - Throws: ``E4DecodeError/wrongLength(expected:actual:)`` or ``E4DecodeError/duplicate(counter:)``.
    public mutating func decode(_ bytes: RawSpan, into packet: inout E4GSRPacket) throws(E4DecodeError)
        -> E4Continuity
    {
        try self.gate.checkLength(bytes, E4GSR.packetLength)
        let counter = bytes.e4UInt16LE(E4GSR.counterOffset)
        let continuity = try self.gate.classify(UInt32(counter))
        packet.counter = counter
        for sample in 0..<E4GSR.samplesPerPacket {
            let code = bytes.e4UInt24BE(3 * sample)
            packet.codes[sample] = code
            packet.microsiemens[sample] = E4GSR.microsiemens(code: code)
        }
        self.gate.accept(UInt32(counter), continuity)
        return continuity
    }

    /// ``decode(_:into:)`` for callers holding an `UnsafeRawBufferPointer`.
    public mutating func decode(_ bytes: UnsafeRawBufferPointer, into packet: inout E4GSRPacket)
        throws(E4DecodeError) -> E4Continuity
    {
        try self.decode(bytes.bytes, into: &packet)
    }
}
