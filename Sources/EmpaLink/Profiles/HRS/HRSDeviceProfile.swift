import Bluetooth

/// The Bluetooth SIG Heart Rate Service as a ``DeviceProfile`` (SPEC §16): chest straps and armbands (Polar, Garmin,
/// Wahoo, Coospo …). Recognised by the Heart Rate service UUID 0x180D in what the device advertised (or by
/// `profile = "hrs"` in its whitelist entry); Heart Rate Measurement (0x2A37) required; Battery Level (0x2A19) read at
/// the start and subscribed where it notifies; Body Sensor Location and the Device Information strings read once.
/// No session-start write: a strap streams once subscribed.
public struct HRSDeviceProfile: DeviceProfile {
    public init() {}

    public var name: String { "hrs" }

    public var displayName: String { "Heart Rate Sensor" }

    /// Heart Rate service 0x180D.
    public static let heartRateService = BluetoothUUID.bit16(0x180D)
    public static let heartRateMeasurement = BluetoothUUID.bit16(0x2A37)
    public static let bodySensorLocation = BluetoothUUID.bit16(0x2A38)
    public static let batteryLevel = BluetoothUUID.bit16(0x2A19)
    public static let manufacturerName = BluetoothUUID.bit16(0x2A29)
    public static let modelNumber = BluetoothUUID.bit16(0x2A24)
    public static let serialNumber = BluetoothUUID.bit16(0x2A25)
    public static let firmwareRevision = BluetoothUUID.bit16(0x2A26)

    /// Channels, the indices of ``characteristics``.
    enum Channel: Int {
        case measurement = 0, battery, location, manufacturer, model, serial, firmware
    }

    /// By the Heart Rate service among the advertised or resolved service UUIDs.
    public func recognizes(name: String?, serviceUUIDs: [BluetoothUUID]) -> Bool {
        serviceUUIDs.contains(Self.heartRateService)
    }

    /// 0x180D in the complete or incomplete list of 16-bit service UUIDs (AD types 0x03, 0x02), little-endian.
    public var advertisementPatterns: [AdvertisementPattern] {
        [AdvertisementPattern(adType: 0x03, bytes: [0x0D, 0x18]), AdvertisementPattern(adType: 0x02, bytes: [0x0D, 0x18])]
    }

    public var characteristics: [ProfileCharacteristic] {
        [
            ProfileCharacteristic(uuid: Self.heartRateMeasurement, label: "heart rate measurement", notifies: true,
                                  isRequired: true),
            ProfileCharacteristic(uuid: Self.batteryLevel, label: "battery", notifies: true, readAtStart: true,
                                  isRequired: false),
            ProfileCharacteristic(uuid: Self.bodySensorLocation, label: "body sensor location", notifies: false,
                                  readAtStart: true, isRequired: false),
            ProfileCharacteristic(uuid: Self.manufacturerName, label: "manufacturer", notifies: false,
                                  readAtStart: true, isRequired: false),
            ProfileCharacteristic(uuid: Self.modelNumber, label: "model", notifies: false, readAtStart: true,
                                  isRequired: false),
            ProfileCharacteristic(uuid: Self.serialNumber, label: "serial number", notifies: false, readAtStart: true,
                                  isRequired: false),
            ProfileCharacteristic(uuid: Self.firmwareRevision, label: "firmware", notifies: false, readAtStart: true,
                                  isRequired: false),
        ]
    }

    public func sessionStart(unixTime: Double) -> [ProfileWrite] { [] }

    public func makeDecoder() -> any ProfileDecoder { HRSProfileDecoder() }

    /// Third-party straps carry no Empatica serial for a key to name: the whitelist decides.
    public var requiresKeyGrant: Bool { false }

    /// The Body Sensor Location values of the GATT Specification Supplement.
    static func locationName(_ code: UInt8) -> String {
        switch code {
        case 0: "other"
        case 1: "chest"
        case 2: "wrist"
        case 3: "finger"
        case 4: "hand"
        case 5: "ear lobe"
        case 6: "foot"
        default: "reserved (\(code))"
        }
    }
}
