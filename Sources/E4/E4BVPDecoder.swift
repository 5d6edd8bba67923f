/// Decodes the BVP stream (3EA1): integrates the 7-bit deltas into running green and red counts and publishes
/// the green count minus its slow baseline, sign-inverted (SPEC §6).
///
/// Start: the counts start at 0 before the first delta after init or ``reset()``, and the baseline starts at
/// the first green count, so the first published value is 0 and the signal starts near 0. Each later sample
/// moves the baseline by `alpha · (green − baseline)` with `alpha = 1 − e^(−1/128)` (time constant 2 s at
/// 64 Hz) before the value `−(green − baseline)` is taken.
///
/// Lost packets: their deltas are unknown, so integration continues from the last count as if they summed to
/// zero; the published value has no step, only a hole the timing layer skips over.
public struct E4BVPDecoder: Sendable {
    /// `1 − e^(−1/128)`: an exponential moving average with a 2 s time constant at 64 Hz. A literal because a
    /// pure module has no `exp`.
    public static let baselineAlpha = 0.007782061739756485

    /// The running green count after the last accepted sample.
    public private(set) var green: Int64 = 0
    /// The running red count after the last accepted sample.
    public private(set) var red: Int64 = 0
    /// The slow baseline of the green count; `nil` before the first sample.
    public private(set) var baseline: Double?
    /// Length, flow counter and statistics.
    private var gate = E4PacketGate(width: E4BVP.counterWidth)
    /// The flow counter (6 bits).
    public var flow: E4FlowTracker { self.gate.flow }
    /// What this decoder has seen.
    public var statistics: E4StreamStatistics { self.gate.statistics }

    /// A decoder with no history.
    public init() {}

    /// Forgets the counts, baseline and flow counter (on connect and reconnect); statistics are kept.
    public mutating func reset() {
        self.green = 0
        self.red = 0
        self.baseline = nil
        self.gate.reset()
    }

    /// Decodes one notification into `packet`.
    ///
    /// - Parameters:
    ///   - bytes: The notification, exactly 20 bytes.
    ///   - packet: Receives counter, counts and values; untouched when this throws.
    /// - Returns: How the packet follows the previous one.
    /// - Throws: ``E4DecodeError/wrongLength(expected:actual:)`` or ``E4DecodeError/duplicate(counter:)``;
    ///   the decoder's counts, baseline and counter are then unchanged.
    public mutating func decode(_ bytes: RawSpan, into packet: inout E4BVPPacket) throws(E4DecodeError)
        -> E4Continuity
    {
        try self.gate.checkLength(bytes, E4BVP.packetLength)
        let counter = E4BVP.counter(bytes)
        let continuity = try self.gate.classify(UInt32(counter))
        packet.counter = counter
        for sample in 0..<E4BVP.samplesPerPacket {
            self.green &+= Int64(E4BVP.delta(bytes, 2 * sample))
            self.red &+= Int64(E4BVP.delta(bytes, 2 * sample + 1))
            let level = Double(self.green)
            var baseline = self.baseline ?? level
            baseline += Self.baselineAlpha * (level - baseline)
            self.baseline = baseline
            packet.green[sample] = self.green
            packet.red[sample] = self.red
            packet.value[sample] = Float(baseline - level)
        }
        self.gate.accept(UInt32(counter), continuity)
        return continuity
    }

    /// ``decode(_:into:)`` for callers holding an `UnsafeRawBufferPointer` (e.g. a `read(2)` buffer).
    public mutating func decode(_ bytes: UnsafeRawBufferPointer, into packet: inout E4BVPPacket)
        throws(E4DecodeError) -> E4Continuity
    {
        try self.decode(bytes.bytes, into: &packet)
    }
}
