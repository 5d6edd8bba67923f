/// The control characteristic of profile v1 (SPEC §6, 3EB2): byte 0 = `0x01` is a button press (a tag at the
/// arrival time); other values are events this profile does not know and are ignored, not errors.
public enum E4Control {
    /// The fewest bytes a control event has.
    public static let minimumLength = 1
    /// Byte 0 of a button press.
    public static let buttonPress: UInt8 = 0x01

    /// Encodes a button press.
    public static func encodeTag(into packet: inout E4PacketBytes) {
        Self.encode(byte: Self.buttonPress, into: &packet)
    }

    /// Encodes a control event with any byte 0 (fault injection, unknown events).
    public static func encode(byte: UInt8, into packet: inout E4PacketBytes) {
        packet.reset(count: 1)
        packet.set(0, byte)
    }
}
