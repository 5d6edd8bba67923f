import Bluetooth

/// One data stream of an E4, named as in the MQTT topics (SPEC §10).
public enum E4Stream: String, CaseIterable, Sendable, Hashable {
    case bvp
    case gsr
    case acc
    case temp
    case battery
    case tag

    /// Samples per second for sampled streams (BVP 64, GSR 4, ACC 32, temperature 4); `nil` for events.
    public var sampleRate: Double? {
        switch self {
        case .bvp: 64
        case .gsr: 4
        case .acc: 32
        case .temp: 4
        case .battery, .tag: nil
        }
    }

    /// Samples carried by one packet: BVP 11, GSR 6, ACC 6, temperature 8; 1 for the event streams.
    public var samplesPerPacket: Int {
        switch self {
        case .bvp: E4BVP.samplesPerPacket
        case .gsr: E4GSR.samplesPerPacket
        case .acc: E4ACC.samplesPerPacket
        case .temp: E4Temperature.samplesPerPacket
        case .battery, .tag: 1
        }
    }

    /// The characteristic the stream arrives on.
    public var characteristic: BluetoothUUID {
        switch self {
        case .bvp: E4Profile.bvpCharacteristic
        case .gsr: E4Profile.gsrCharacteristic
        case .acc: E4Profile.accCharacteristic
        case .temp: E4Profile.temperatureCharacteristic
        case .battery: E4Profile.batteryCharacteristic
        case .tag: E4Profile.controlCharacteristic
        }
    }

    /// The stream carried by a characteristic, or `nil` for one that carries none (e.g. the command).
    public init?(characteristic: BluetoothUUID) {
        guard let short = characteristic.uuid16 else { return nil }
        self.init(characteristic16: short)
    }

    /// The stream carried by a 16-bit characteristic UUID, as recorded in a capture (SPEC §6.4).
    public init?(characteristic16: UInt16) {
        switch characteristic16 {
        case 0x3EA1: self = .bvp
        case 0x3EA8: self = .gsr
        case 0x3EA3: self = .acc
        case 0x3EA6: self = .temp
        case 0x3EB3: self = .battery
        case 0x3EB2: self = .tag
        default: return nil
        }
    }
}
