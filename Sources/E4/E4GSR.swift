/// The GSR (EDA) packet layout of profile v1 (SPEC §6, characteristic 3EA8) and its unit conversion.
///
/// Bytes 0…17: 6 samples of 24-bit big-endian unsigned skin-resistance codes. Bytes 18…19: little-endian
/// `UInt16` flow counter. Conductance in µS = 1 000 000 / code; code 0 means no skin contact and reads 0 µS.
public enum E4GSR {
    /// Bytes per packet.
    public static let packetLength = 20
    /// Samples per packet.
    public static let samplesPerPacket = 6
    /// The largest code 24 bits carry.
    public static let maximumCode: UInt32 = 0xFF_FFFF
    /// Byte offset of the flow counter.
    static let counterOffset = 18
    /// The flow counter's width.
    public static let counterWidth = E4CounterWidth.bits16

    /// Skin conductance in µS for a code: 1 000 000 / code, or 0 for code 0 ("no contact").
    public static func microsiemens(code: UInt32) -> Float {
        code == 0 ? 0 : Float(1_000_000.0 / Double(code))
    }

    /// The code nearest to a conductance, for encoders: 0 for 0 µS or less (and NaN), clamped to 1…``maximumCode``.
    public static func code(microsiemens: Double) -> UInt32 {
        guard microsiemens > 0 else { return 0 }
        let code = (1_000_000.0 / microsiemens).rounded()
        guard code < Double(Self.maximumCode) else { return Self.maximumCode }
        return max(1, UInt32(code))
    }

    /// Encodes one packet.
    ///
    /// - Parameters:
    ///   - codes: The 6 codes; any above ``maximumCode`` is clamped in place so it holds what was sent.
    ///   - counter: The flow counter.
    ///   - packet: Receives the 20 bytes.
    /// - Returns: How many codes were clamped.
    @discardableResult
    public static func encode(codes: inout InlineArray<6, UInt32>, counter: UInt16, into packet: inout E4PacketBytes)
        -> Int
    {
        packet.reset(count: Self.packetLength)
        var clamped = 0
        for sample in 0..<Self.samplesPerPacket {
            if codes[sample] > Self.maximumCode {
                codes[sample] = Self.maximumCode
                clamped += 1
            }
            let code = codes[sample]
            packet.set(3 * sample, UInt8(truncatingIfNeeded: code >> 16))
            packet.set(3 * sample + 1, UInt8(truncatingIfNeeded: code >> 8))
            packet.set(3 * sample + 2, UInt8(truncatingIfNeeded: code))
        }
        packet.setUInt16LE(Self.counterOffset, counter)
        return clamped
    }
}
