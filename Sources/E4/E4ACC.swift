/// The accelerometer packet layout of profile v1 (SPEC §6, characteristic 3EA3).
///
/// Bytes 0…17: 6 samples of (x, y, z) as `Int8`, 1 g = 64 (±2 g). Bytes 18…19: little-endian `UInt16` flow
/// counter.
public enum E4ACC {
    /// Bytes per packet.
    public static let packetLength = 20
    /// Samples per packet.
    public static let samplesPerPacket = 6
    /// Counts per g.
    public static let countsPerG = 64
    /// Byte offset of the flow counter.
    static let counterOffset = 18
    /// The flow counter's width.
    public static let counterWidth = E4CounterWidth.bits16

    /// Encodes one packet.
    ///
    /// - Parameters:
    ///   - x: X axis per sample, 1/64 g.
    ///   - y: Y axis per sample.
    ///   - z: Z axis per sample.
    ///   - counter: The flow counter.
    ///   - packet: Receives the 20 bytes.
    public static func encode(
        x: InlineArray<6, Int8>,
        y: InlineArray<6, Int8>,
        z: InlineArray<6, Int8>,
        counter: UInt16,
        into packet: inout E4PacketBytes
    ) {
        packet.reset(count: Self.packetLength)
        for sample in 0..<Self.samplesPerPacket {
            packet.set(3 * sample, UInt8(bitPattern: x[sample]))
            packet.set(3 * sample + 1, UInt8(bitPattern: y[sample]))
            packet.set(3 * sample + 2, UInt8(bitPattern: z[sample]))
        }
        packet.setUInt16LE(Self.counterOffset, counter)
    }
}
