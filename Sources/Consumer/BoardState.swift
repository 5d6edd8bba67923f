/// The retained and periodic state topics of SPEC §10, read for consumers.
public struct DeviceState: Equatable, Sendable {
    /// `connected`, `connecting`, `disconnecting` or `disconnected`.
    public var status: String
    public var address: String?
    public var label: String?
    public var rssi: Int?
    public var battery: Double?
    public var since: Double?
    public var sid: String?

    public init(status: String, address: String? = nil, label: String? = nil, rssi: Int? = nil,
                battery: Double? = nil, since: Double? = nil, sid: String? = nil) {
        self.status = status
        self.address = address
        self.label = label
        self.rssi = rssi
        self.battery = battery
        self.since = since
        self.sid = sid
    }

    public var isConnected: Bool { self.status == "connected" }

    /// - Throws: ``PayloadError`` when `status` is missing or not one of the four states.
    public static func decode(_ json: PayloadJSON) throws(PayloadError) -> DeviceState {
        guard let status = json["status"]?.string,
              ["connected", "connecting", "disconnecting", "disconnected"].contains(status)
        else { throw PayloadError("device status without a valid status") }
        var state = DeviceState(status: status)
        state.address = json["address"]?.string
        state.label = json["label"]?.string
        state.rssi = json["rssi"]?.number.flatMap(SeenDevice.rssi)
        state.battery = json["battery"]?.number.flatMap { (0...1).contains($0) ? $0 : nil }
        state.since = json["since"]?.number
        state.sid = json["sid"]?.string
        return state
    }
}

/// One wristband of `P/A/devices`.
public struct SeenDevice: Equatable, Sendable {
    public var address: String?
    public var name: String?
    public var rssi: Int?
    public var allowed: Bool
    /// The device's profile (`"e4"`, `"hrs"`) where the board says (SPEC §16).
    public var profile: String?

    public init(address: String? = nil, name: String? = nil, rssi: Int? = nil, allowed: Bool,
                profile: String? = nil) {
        self.address = address
        self.name = name
        self.rssi = rssi
        self.allowed = allowed
        self.profile = profile
    }

    /// An RSSI (dBm) in -200…20 as an integer; anything else is left out (a payload's `1e300` must not trap).
    static func rssi(_ value: Double) -> Int? {
        (-200...20).contains(value) ? Int(value) : nil
    }

    /// - Throws: ``PayloadError`` when the payload is not an object of objects with a boolean `allowed`.
    public static func decodeAll(_ json: PayloadJSON) throws(PayloadError) -> [String: SeenDevice] {
        guard let members = json.object else { throw PayloadError("devices is not an object") }
        var devices: [String: SeenDevice] = [:]
        for (serial, entry) in members {
            guard ConsumerTopic.isDeviceID(serial), case .bool(let allowed)? = entry["allowed"] else {
                throw PayloadError("devices entry without a valid serial or allowed flag")
            }
            devices[serial] = SeenDevice(address: entry["address"]?.string, name: entry["name"]?.string,
                                         rssi: entry["rssi"]?.number.flatMap(Self.rssi), allowed: allowed,
                                         profile: entry["profile"]?.string)
        }
        return devices
    }
}

/// What `watch` shows from `P/A/metrics`.
public struct BoardMetrics: Equatable, Sendable {
    public struct Device: Equatable, Sendable {
        public var rxPackets: Int
        public var lost: Int
        public init(rxPackets: Int, lost: Int) {
            self.rxPackets = rxPackets
            self.lost = lost
        }
    }
    public var devices: [String: Device] = [:]
    /// Spooled records waiting for the broker.
    public var spoolRecords: Int?

    public init() {}

    /// - Throws: ``PayloadError`` when the payload is not an object with a `devices` object.
    public static func decode(_ json: PayloadJSON) throws(PayloadError) -> BoardMetrics {
        guard let devices = json["devices"]?.object else { throw PayloadError("metrics without devices") }
        var metrics = BoardMetrics()
        for (serial, entry) in devices where ConsumerTopic.isDeviceID(serial) {
            metrics.devices[serial] = Device(rxPackets: entry["rx_packets"]?.count ?? 0, lost: entry["lost"]?.count ?? 0)
        }
        metrics.spoolRecords = json["spool"]?["records"]?.count
        return metrics
    }
}
