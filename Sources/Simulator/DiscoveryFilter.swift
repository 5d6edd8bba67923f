import DBus

/// One client's `SetDiscoveryFilter` dictionary, validated as bluetoothd does (`parse_discovery_filter_dict`).
struct DiscoveryFilter: Sendable, Equatable {
    var transport = "auto"
    var rssi: Int16?
    var pathloss: UInt16?
    var uuids: [String] = []
    var duplicateData = false
    var discoverable = false
    var pattern = ""
    /// Keys present that BlueZ < 5.71 mishandles (SPEC §5); counted by the simulator.
    var usedDuplicateData = false
    var usedDiscoverable = false

    /// The keys `GetDiscoveryFilters` lists.
    static let keys = ["UUIDs", "RSSI", "Pathloss", "Transport", "DuplicateData", "Discoverable", "Pattern"]

    /// Parses the `a{sv}` argument.
    ///
    /// - Returns: the filter, or `InvalidArguments` for an unknown key, a wrong type, an unknown transport, or
    ///   `RSSI` together with `Pathloss` — BlueZ's checks.
    static func parse(_ value: DBusValue) -> Result<DiscoveryFilter, DBusError> {
        guard let entries = value.stringDictionary else { return .failure(BlueZError.invalidArguments) }
        var filter = DiscoveryFilter()
        for (key, raw) in entries {
            let value = raw.unwrapped
            switch (key, value) {
            case ("Transport", .string(let transport)):
                guard ["auto", "bredr", "le"].contains(transport) else { return .failure(BlueZError.invalidArguments) }
                filter.transport = transport
            case ("RSSI", .int16(let rssi)):
                filter.rssi = rssi
            case ("Pathloss", .uint16(let pathloss)):
                filter.pathloss = pathloss
            case ("UUIDs", .array("s", let items)):
                filter.uuids = items.compactMap(\.string).map { $0.lowercased() }
            case ("DuplicateData", .boolean(let flag)):
                filter.duplicateData = flag
                filter.usedDuplicateData = true
            case ("Discoverable", .boolean(let flag)):
                filter.discoverable = flag
                filter.usedDiscoverable = true
            case ("Pattern", .string(let pattern)):
                filter.pattern = pattern
            default:
                return .failure(BlueZError.invalidArguments)
            }
        }
        if filter.rssi != nil && filter.pathloss != nil { return .failure(BlueZError.invalidArguments) }
        return .success(filter)
    }

    /// Whether an LE advertisement from `address`/`name` at `rssi` passes this filter.
    func matches(address: String, name: String, rssi: Int16, advertisedUUIDs: [String]) -> Bool {
        guard self.transport != "bredr" else { return false }
        if let threshold = self.rssi, rssi < threshold { return false }
        if let pathloss = self.pathloss, Int(pathloss) < 4 - Int(rssi) { return false }
        if !self.uuids.isEmpty && !self.uuids.contains(where: advertisedUUIDs.contains) { return false }
        if !self.pattern.isEmpty && !address.hasPrefix(self.pattern) && !name.hasPrefix(self.pattern) { return false }
        return true
    }
}
