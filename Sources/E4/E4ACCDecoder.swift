/// Decodes the accelerometer stream (3EA3) and follows its 16-bit flow counter.
public struct E4ACCDecoder: Sendable {
    /// Length, flow counter and statistics.
    private var gate = E4PacketGate(width: E4ACC.counterWidth)
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
    ///   - packet: Receives counter and samples; untouched when this throws.
    /// - Returns: How the packet follows the previous one.
    /// - Throws: ``E4DecodeError/wrongLength(expected:actual:)`` or ``E4DecodeError/duplicate(counter:)``.
    public mutating func decode(_ bytes: RawSpan, into packet: inout E4ACCPacket) throws(E4DecodeError)
        -> E4Continuity
    {
        try self.gate.checkLength(bytes, E4ACC.packetLength)
        let counter = bytes.e4UInt16LE(E4ACC.counterOffset)
        let continuity = try self.gate.classify(UInt32(counter))
        packet.counter = counter
        for sample in 0..<E4ACC.samplesPerPacket {
            packet.x[sample] = Int8(bitPattern: bytes.e4Byte(3 * sample))
            packet.y[sample] = Int8(bitPattern: bytes.e4Byte(3 * sample + 1))
            packet.z[sample] = Int8(bitPattern: bytes.e4Byte(3 * sample + 2))
        }
        self.gate.accept(UInt32(counter), continuity)
        return continuity
    }

    /// ``decode(_:into:)`` for callers holding an `UnsafeRawBufferPointer`.
    public mutating func decode(_ bytes: UnsafeRawBufferPointer, into packet: inout E4ACCPacket)
        throws(E4DecodeError) -> E4Continuity
    {
        try self.decode(bytes.bytes, into: &packet)
    }
}
