import Bluetooth
import DBus

/// An adapter as the cache last saw it.
public struct BlueZAdapterInfo: Sendable, Equatable {
    public var path: String
    /// The adapter's own address; `nil` when BlueZ reported none or one that does not parse.
    public var address: BluetoothAddress?
    public var powered: Bool
    public var discovering: Bool

    init(path: String, properties: BlueZObjectCache.Properties) {
        self.path = path
        self.address = BlueZIdentifiers.address(properties["Address"])
        self.powered = properties["Powered"]?.bool ?? false
        self.discovering = properties["Discovering"]?.bool ?? false
    }
}

/// A device as the cache last saw it. Every field comes from BlueZ and is treated as untrusted input: the
/// identifiers are parsed here, once, and a malformed one reads as absent (and is counted in
/// ``BlueZObjectCache/malformedIdentifiers``).
public struct BlueZDeviceInfo: Sendable, Equatable {
    public var path: String
    public var adapter: String?
    /// The device address (`Device1.Address`); `nil` when absent or malformed.
    public var address: BluetoothAddress?
    /// Whether ``address`` is public or random (`Device1.AddressType`); `nil` when absent or unknown.
    public var addressType: BluetoothAddressType?
    public var name: String?
    /// Present only while the device is being discovered.
    public var rssi: Int?
    public var connected: Bool
    public var servicesResolved: Bool
    /// The service UUIDs the device advertised or BlueZ resolved (`Device1.UUIDs`); malformed entries are left out.
    public var serviceUUIDs: [BluetoothUUID]

    init(path: String, properties: BlueZObjectCache.Properties) {
        self.path = path
        self.adapter = properties["Adapter"]?.string
        self.address = BlueZIdentifiers.address(properties["Address"])
        self.addressType = properties["AddressType"]?.string.flatMap { BluetoothAddressType($0) }
        self.name = properties["Name"]?.string ?? properties["Alias"]?.string
        self.rssi = properties["RSSI"]?.int64.map { Int(clamping: $0) }
        self.connected = properties["Connected"]?.bool ?? false
        self.servicesResolved = properties["ServicesResolved"]?.bool ?? false
        self.serviceUUIDs = properties["UUIDs"]?.arrayElements?.compactMap(BlueZIdentifiers.uuid) ?? []
    }
}

/// A GATT characteristic under a device.
public struct BlueZCharacteristicInfo: Sendable, Equatable {
    public var path: String
    public var uuid: BluetoothUUID
    public var flags: [String]
    public var notifying: Bool

    /// `nil` when the characteristic has no parseable `UUID` (such an object is useless to a profile, and counted).
    init?(path: String, properties: BlueZObjectCache.Properties) {
        guard let uuid = BlueZIdentifiers.uuid(properties["UUID"]) else { return nil }
        self.path = path
        self.uuid = uuid
        self.flags = properties["Flags"]?.arrayElements?.compactMap(\.string) ?? []
        self.notifying = properties["Notifying"]?.bool ?? false
    }
}
