/// One decoded BVP packet: 11 samples, written by ``E4BVPDecoder`` into storage the caller owns.
public struct E4BVPPacket: Sendable {
    /// The packet's 6-bit flow counter (0…63).
    public var counter: UInt8
    /// The running green count after each sample: the integral of the green deltas since the decoder's reset.
    public var green: InlineArray<11, Int64>
    /// The running red count after each sample.
    public var red: InlineArray<11, Int64>
    /// The published BVP per sample: −(green − baseline), in device counts, systolic peaks positive.
    public var value: InlineArray<11, Float>

    /// A zeroed packet to decode into.
    public init() {
        self.counter = 0
        self.green = InlineArray(repeating: 0)
        self.red = InlineArray(repeating: 0)
        self.value = InlineArray(repeating: 0)
    }
}
