/// The BVP packet layout of profile v1 (SPEC §6, characteristic 3EA1), in one place for encoder and decoder.
///
/// The 20 bytes are read as 160 bits, most significant bit of byte 0 first. Bits [7k, 7k+7) for k = 0…21 are
/// 7-bit two's-complement deltas, k even green, k odd red: 11 green and 11 red samples. Bits [154, 160), the
/// low 6 bits of byte 19, are a 6-bit flow counter.
public enum E4BVP {
    /// Bytes per packet.
    public static let packetLength = 20
    /// Samples (green/red pairs) per packet.
    public static let samplesPerPacket = 11
    /// Bits per delta.
    public static let deltaBits = 7
    /// The smallest delta 7 bits carry.
    public static let minimumDelta = -64
    /// The largest delta 7 bits carry.
    public static let maximumDelta = 63
    /// The flow counter's width.
    public static let counterWidth = E4CounterWidth.bits6

    /// The 7-bit delta number `k` (0…21) of a 20-byte packet, sign-extended.
    static func delta(_ bytes: RawSpan, _ k: Int) -> Int {
        let bit = 7 * k
        let byteIndex = bit >> 3
        // Bit 7k+6 is at most bit 153, so byteIndex + 1 ≤ 19 is always inside the packet.
        let window = UInt16(bytes.e4Byte(byteIndex)) << 8 | UInt16(bytes.e4Byte(byteIndex + 1))
        let field = UInt8(truncatingIfNeeded: window >> UInt16(16 - 7 - (bit & 7))) & 0x7F
        return Int(Int8(bitPattern: field << 1) >> 1)
    }

    /// The 6-bit flow counter of a 20-byte packet.
    static func counter(_ bytes: RawSpan) -> UInt8 {
        bytes.e4Byte(19) & 0x3F
    }

    /// Encodes one BVP packet from 11 green and 11 red deltas.
    ///
    /// Deltas outside −64…63 are clamped **in place**, so after the call `green` and `red` hold exactly what was
    /// sent: a simulator's ground truth must follow them, not its wish (see ``E4BVPEncoder`` for an encoder that
    /// carries the clamped remainder into later samples).
    ///
    /// - Parameters:
    ///   - green: The green deltas; clamped in place.
    ///   - red: The red deltas; clamped in place.
    ///   - counter: The flow counter; only its low 6 bits are sent (the counter wraps at 64).
    ///   - packet: Receives the 20 bytes.
    /// - Returns: How many deltas were clamped (0 when the packet carries the signal unchanged).
    @discardableResult
    public static func encode(
        green: inout InlineArray<11, Int>,
        red: inout InlineArray<11, Int>,
        counter: UInt8,
        into packet: inout E4PacketBytes
    ) -> Int {
        packet.reset(count: Self.packetLength)
        var clamped = 0
        for sample in 0..<Self.samplesPerPacket {
            let g = min(max(green[sample], Self.minimumDelta), Self.maximumDelta)
            let r = min(max(red[sample], Self.minimumDelta), Self.maximumDelta)
            if g != green[sample] { clamped += 1; green[sample] = g }
            if r != red[sample] { clamped += 1; red[sample] = r }
            Self.put(g, at: 2 * sample, into: &packet)
            Self.put(r, at: 2 * sample + 1, into: &packet)
        }
        packet.set(19, packet.get(19) | (counter & 0x3F))
        return clamped
    }

    /// ORs delta `k` (already in −64…63) into its 7 bits.
    private static func put(_ delta: Int, at k: Int, into packet: inout E4PacketBytes) {
        let bit = 7 * k
        let byteIndex = bit >> 3
        let field = UInt16(UInt8(truncatingIfNeeded: delta) & 0x7F)
        let window = field << UInt16(16 - 7 - (bit & 7))
        packet.set(byteIndex, packet.get(byteIndex) | UInt8(truncatingIfNeeded: window >> 8))
        packet.set(byteIndex + 1, packet.get(byteIndex + 1) | UInt8(truncatingIfNeeded: window))
    }
}
