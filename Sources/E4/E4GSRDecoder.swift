/// Decodes the GSR stream (3EA8) and follows its 16-bit flow counter.
public struct E4GSRDecoder: Sendable {
    /// The flow counter (16 bits).
    public private(set) var flow = E4FlowTracker(width: E4GSR.counterWidth)
    /// What this decoder has seen.
    public private(set) var statistics = E4StreamStatistics()

    /// A decoder with no history.
    public init() {}

    /// Forgets the flow counter (on connect and reconnect); statistics are kept.
    public mutating func reset() {
        self.flow.reset()
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
        guard bytes.byteCount == E4GSR.packetLength else {
            self.statistics.decodeErrors &+= 1
            throw .wrongLength(expected: E4GSR.packetLength, actual: bytes.byteCount)
        }
        let counter = bytes.e4UInt16LE(E4GSR.counterOffset)
        let continuity: E4Continuity
        do {
            continuity = try self.flow.classify(UInt32(counter))
        } catch {
            self.statistics.duplicates &+= 1
            throw error
        }
        packet.counter = counter
        for sample in 0..<E4GSR.samplesPerPacket {
            let code = bytes.e4UInt24BE(3 * sample)
            packet.codes[sample] = code
            packet.microsiemens[sample] = E4GSR.microsiemens(code: code)
        }
        self.flow.accept(UInt32(counter))
        self.statistics.record(continuity)
        return continuity
    }

    /// ``decode(_:into:)`` for callers holding an `UnsafeRawBufferPointer`.
    public mutating func decode(_ bytes: UnsafeRawBufferPointer, into packet: inout E4GSRPacket)
        throws(E4DecodeError) -> E4Continuity
    {
        try self.decode(bytes.bytes, into: &packet)
    }
}
