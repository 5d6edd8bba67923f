/// The skin-temperature packet layout of profile v1 (SPEC §6, characteristic 3EA6) and its unit conversion.
///
/// Bytes 0…15: 8 samples of little-endian `UInt16` raw values, °C = raw × 0.02 − 273.15. Bytes 16…19:
/// little-endian `UInt32` flow counter.
///
/// The sensor measures −40…115 °C, so a raw value outside ``validRaw`` (11 658…19 407) cannot come from it:
/// such a packet is corrupt and is dropped as ``E4InvalidContent/temperatureRaw(index:raw:)``. This is the one
/// plausibility check of the profile; if a field capture ever shows real values outside it, widen it here.
public enum E4Temperature {
    /// Bytes per packet.
    public static let packetLength = 20
    /// Samples per packet.
    public static let samplesPerPacket = 8
    /// Raw values the sensor's −40…115 °C range can produce.
    public static let validRaw: ClosedRange<UInt16> = 11_658...19_407
    /// Byte offset of the flow counter.
    static let counterOffset = 16
    /// The flow counter's width.
    public static let counterWidth = E4CounterWidth.bits32

    /// °C for a raw value: raw × 0.02 − 273.15.
    public static func celsius(raw: UInt16) -> Float {
        Float(Double(raw) * 0.02 - 273.15)
    }

    /// The raw value nearest to a temperature, for encoders, clamped to ``validRaw`` (NaN gives its lower bound).
    public static func raw(celsius: Double) -> UInt16 {
        let raw = ((celsius + 273.15) / 0.02).rounded()
        guard raw >= Double(Self.validRaw.lowerBound) else { return Self.validRaw.lowerBound }
        guard raw <= Double(Self.validRaw.upperBound) else { return Self.validRaw.upperBound }
        return UInt16(raw)
    }

    /// Encodes one packet. Raw values are written as given, even outside ``validRaw``, so a fault injector can
    /// send what a decoder must reject.
    ///
    /// - Parameters:
    ///   - raw: The 8 raw values.
    ///   - counter: The flow counter.
    ///   - packet: Receives the 20 bytes.
    public static func encode(raw: InlineArray<8, UInt16>, counter: UInt32, into packet: inout E4PacketBytes) {
        packet.reset(count: Self.packetLength)
        for sample in 0..<Self.samplesPerPacket {
            packet.setUInt16LE(2 * sample, raw[sample])
        }
        packet.setUInt32LE(Self.counterOffset, counter)
    }
}
