/// Encodes absolute green and red counts as BVP packets, the inverse of ``E4BVPDecoder``'s integration.
///
/// It remembers the counts it has actually sent. When a step exceeds what 7 bits carry (−64…63) the delta is
/// clamped and the rest carried into the following samples, so the sent signal catches up instead of drifting;
/// the counts written back to the caller are what a decoder reset at the same time will reconstruct, exactly.
/// The counter starts at 0 and advances by one per packet, wrapping at 64.
public struct E4BVPEncoder: Sendable {
    /// The green count a decoder holds after the last packet encoded.
    public private(set) var sentGreen: Int = 0
    /// The red count a decoder holds after the last packet encoded.
    public private(set) var sentRed: Int = 0
    /// The flow counter the next packet carries (0…63).
    public var counter: UInt8 = 0

    /// An encoder whose counts start at 0, like a freshly reset decoder.
    public init() {}

    /// Encodes 11 samples.
    ///
    /// - Parameters:
    ///   - green: The wanted green counts; replaced by the counts actually sent.
    ///   - red: The wanted red counts; replaced by the counts actually sent.
    ///   - packet: Receives the 20 bytes.
    /// - Returns: How many of the 22 sent counts differ from the wanted ones (0 when the signal went out unchanged).
    @discardableResult
    public mutating func encode(
        green: inout InlineArray<11, Int>,
        red: inout InlineArray<11, Int>,
        into packet: inout E4PacketBytes
    ) -> Int {
        var greenDeltas = InlineArray<11, Int>(repeating: 0)
        var redDeltas = InlineArray<11, Int>(repeating: 0)
        var green0 = self.sentGreen
        var red0 = self.sentRed
        for sample in 0..<E4BVP.samplesPerPacket {
            // Wrapping subtraction: a caller's absurd count cannot trap the simulator; it is clamped below.
            greenDeltas[sample] = green[sample] &- green0
            redDeltas[sample] = red[sample] &- red0
            greenDeltas[sample] = min(max(greenDeltas[sample], E4BVP.minimumDelta), E4BVP.maximumDelta)
            redDeltas[sample] = min(max(redDeltas[sample], E4BVP.minimumDelta), E4BVP.maximumDelta)
            green0 &+= greenDeltas[sample]
            red0 &+= redDeltas[sample]
        }
        E4BVP.encode(green: &greenDeltas, red: &redDeltas, counter: self.counter, into: &packet)
        var clamped = 0
        for sample in 0..<E4BVP.samplesPerPacket {
            self.sentGreen &+= greenDeltas[sample]
            self.sentRed &+= redDeltas[sample]
            if green[sample] != self.sentGreen { clamped += 1 }
            if red[sample] != self.sentRed { clamped += 1 }
            green[sample] = self.sentGreen
            red[sample] = self.sentRed
        }
        self.counter = (self.counter &+ 1) & 0x3F
        return clamped
    }
}
