import Bluetooth

/// The E4 GATT profile v1 (SPEC §6): service and characteristic UUIDs and advertised names.
///
/// Reverse-engineered from the public EmpaLink 0.6 headers and public work; a field capture (SPEC §6.4) is how
/// any of it gets corrected, here and in `Docs/protocol-e4.md`.
public enum E4Profile {
    /// Service 3EA0: the sensor streams.
    public static let sensorService: BluetoothUUID = .bit16(0x3EA0)
    /// Service 3EB0: hardware status (button tags, battery).
    public static let hardwareStatusService: BluetoothUUID = .bit16(0x3EB0)
    /// Service 3E70: the command characteristic.
    public static let commandService: BluetoothUUID = .bit16(0x3E70)

    /// 3EA1, notify: BVP packets.
    public static let bvpCharacteristic: BluetoothUUID = .bit16(0x3EA1)
    /// 3EA3, notify: accelerometer packets.
    public static let accCharacteristic: BluetoothUUID = .bit16(0x3EA3)
    /// 3EA6, notify: skin temperature packets.
    public static let temperatureCharacteristic: BluetoothUUID = .bit16(0x3EA6)
    /// 3EA8, notify: GSR (EDA) packets.
    public static let gsrCharacteristic: BluetoothUUID = .bit16(0x3EA8)
    /// 3EB2, notify: control events (button tags).
    public static let controlCharacteristic: BluetoothUUID = .bit16(0x3EB2)
    /// 3EB3, notify and read: battery percentage.
    public static let batteryCharacteristic: BluetoothUUID = .bit16(0x3EB3)
    /// 3E71, write: commands (start streaming).
    public static let commandCharacteristic: BluetoothUUID = .bit16(0x3E71)

    /// The advertised name of an E4.
    public static let e4Name = "Empatica E4"
    /// The advertised name of an E3, which speaks the same profile.
    public static let e3Name = "Empatica E3"

    /// Whether an advertised name belongs to the E4 family; exact match, no allocation.
    public static func isE4FamilyName(_ name: some StringProtocol) -> Bool {
        name.utf8.elementsEqual(Self.e4Name.utf8) || name.utf8.elementsEqual(Self.e3Name.utf8)
    }

    /// The services a connected device must resolve before subscribing.
    public static let services: [BluetoothUUID] = [Self.sensorService, Self.hardwareStatusService, Self.commandService]

    /// The characteristics subscribed for notifications, one per ``E4Stream``.
    public static let notifyCharacteristics: [BluetoothUUID] = E4Stream.allCases.map(\.characteristic)
}
