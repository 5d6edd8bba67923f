import Bluetooth
import E4

/// The Empatica E4 (and E3) as a ``DeviceProfile`` (SPEC §6): recognised by its advertised name, the BVP stream and
/// the command characteristic required, the other streams optional, a session started by writing `01` and the unix
/// time to the command characteristic, battery read once at the start.
///
/// The UUIDs themselves live in the `E4` module (``E4Profile``, ``E4Stream``); this type only arranges them.
public struct E4DeviceProfile: DeviceProfile {
    public init() {}

    public var name: String { "e4" }

    public var displayName: String { E4Profile.e4Name }

    /// By advertised name only, as the agent has always recognised E4s: an E4's advertisement is not known to carry
    /// its service UUIDs.
    public func recognizes(name: String?, serviceUUIDs: [BluetoothUUID]) -> Bool {
        guard let name else { return false }
        return E4Profile.isE4FamilyName(name)
    }

    public var advertisementPatterns: [AdvertisementPattern] {
        [.completeLocalName(E4Profile.e4Name), .completeLocalName(E4Profile.e3Name)]
    }

    /// Channel 0 is the command characteristic; channels 1… are the streams in ``E4Stream`` order.
    public var characteristics: [ProfileCharacteristic] {
        [ProfileCharacteristic(uuid: E4Profile.commandCharacteristic, label: "command", notifies: false,
                               isRequired: true)]
            + E4Stream.allCases.map { stream in
                ProfileCharacteristic(uuid: stream.characteristic, label: Self.label(stream), notifies: true,
                                      readAtStart: stream == .battery, isRequired: stream == .bvp)
            }
    }

    public func sessionStart(unixTime: Double) -> [ProfileWrite] {
        var packet = E4PacketBytes()
        E4Command.start(unixTime: UInt32(clamping: Int(unixTime))).encode(into: &packet)
        return [ProfileWrite(channel: Self.commandChannel, bytes: packet.withUnsafeBytes { Array($0) })]
    }

    public func makeDecoder() -> any ProfileDecoder {
        E4ProfileDecoder()
    }

    /// The command characteristic's channel.
    static let commandChannel = 0

    /// The stream on `channel`, or `nil` for the command channel and any other. A switch, not `allCases`, which
    /// would build an array on every notification.
    static func stream(channel: Int) -> E4Stream? {
        switch channel {
        case 1: .bvp
        case 2: .gsr
        case 3: .acc
        case 4: .temp
        case 5: .battery
        case 6: .tag
        default: nil
        }
    }

    static func label(_ stream: E4Stream) -> String {
        switch stream {
        case .bvp: "BVP"
        case .gsr: "GSR"
        case .acc: "ACC"
        case .temp: "temperature"
        case .battery: "battery"
        case .tag: "tag"
        }
    }
}
