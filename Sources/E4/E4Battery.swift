/// The battery characteristic of profile v1 (SPEC §6, 3EB3): byte 0 is the charge in percent, 0…100. Longer
/// values are accepted and the extra bytes ignored (a later firmware may append fields).
public enum E4Battery {
    /// The fewest bytes a battery value has.
    public static let minimumLength = 1

    /// The level 0.0…1.0 for a percentage (values above 100 read as 1.0).
    public static func level(percent: UInt8) -> Float {
        Float(min(percent, 100)) / 100
    }

    /// Encodes a battery value. The byte is written as given, even above 100, so a fault injector can send what
    /// a decoder must reject.
    public static func encode(percent: UInt8, into packet: inout E4PacketBytes) {
        packet.reset(count: 1)
        packet.set(0, percent)
    }
}
