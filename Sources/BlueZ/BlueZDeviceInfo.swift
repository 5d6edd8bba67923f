import DBus

/// An adapter as the cache last saw it.
public struct BlueZAdapterInfo: Sendable, Equatable {
    public var path: String
    public var address: String?
    public var powered: Bool
    public var discovering: Bool

    init(path: String, properties: BlueZObjectCache.Properties) {
        self.path = path
        self.address = properties["Address"]?.string
        self.powered = properties["Powered"]?.bool ?? false
        self.discovering = properties["Discovering"]?.bool ?? false
    }
}

/// A device as the cache last saw it. Every field comes from BlueZ and is treated as untrusted input.
public struct BlueZDeviceInfo: Sendable, Equatable {
    public var path: String
    public var adapter: String?
    /// `XX:XX:XX:XX:XX:XX` as BlueZ reports it.
    public var address: String?
    public var name: String?
    /// Present only while the device is being discovered.
    public var rssi: Int?
    public var connected: Bool
    public var servicesResolved: Bool

    init(path: String, properties: BlueZObjectCache.Properties) {
        self.path = path
        self.adapter = properties["Adapter"]?.string
        self.address = properties["Address"]?.string
        self.name = properties["Name"]?.string ?? properties["Alias"]?.string
        self.rssi = properties["RSSI"]?.int64.map { Int(clamping: $0) }
        self.connected = properties["Connected"]?.bool ?? false
        self.servicesResolved = properties["ServicesResolved"]?.bool ?? false
    }
}

/// A GATT characteristic under a device.
public struct BlueZCharacteristicInfo: Sendable, Equatable {
    public var path: String
    /// Lower-case 128-bit UUID string, as BlueZ reports it.
    public var uuid: String
    public var flags: [String]
    public var notifying: Bool

    init(path: String, properties: BlueZObjectCache.Properties) {
        self.path = path
        self.uuid = (properties["UUID"]?.string ?? "").lowercased()
        self.flags = properties["Flags"]?.arrayElements?.compactMap(\.string) ?? []
        self.notifying = properties["Notifying"]?.bool ?? false
    }
}
