import Bluetooth
import DBus

/// BlueZ's objects as last reported: path → interface → property → value.
///
/// Filled from `GetManagedObjects` and kept current by `InterfacesAdded`, `InterfacesRemoved` and
/// `PropertiesChanged`; the client subscribes to those before asking for the snapshot, so no change is missed
/// (signals from one sender arrive in order, and the snapshot replaces whatever came before it).
public struct BlueZObjectCache: Sendable {
    public typealias Properties = [String: DBusValue]

    public private(set) var objects: [String: [String: Properties]] = [:]
    /// Addresses and UUIDs BlueZ sent that do not parse (or have the wrong D-Bus type), counted as they arrive
    /// (snapshot, `InterfacesAdded`, `PropertiesChanged`). The views leave them out: such a device has no
    /// ``BlueZDeviceInfo/address``, such a characteristic is not listed.
    public private(set) var malformedIdentifiers: UInt64 = 0
    /// `InterfacesAdded`, `InterfacesRemoved` and `PropertiesChanged` signals (and snapshot entries) without BlueZ's
    /// shape — wrong argument count or D-Bus types — dropped and counted. (A `PropertiesChanged` for an object not
    /// announced is not malformed: it is ignored, as BlueZ announces objects first.)
    public private(set) var malformedSignals: UInt64 = 0

    public init() {}

    /// The properties of `interface` at `path`, if the object has that interface.
    public func properties(_ path: String, _ interface: String) -> Properties? {
        self.objects[path]?[interface]
    }

    /// Paths of every object with `interface`, sorted.
    public func paths(with interface: String) -> [String] {
        self.objects.compactMap { $0.value[interface] != nil ? $0.key : nil }.sorted()
    }

    /// Paths with `interface` directly or indirectly below `parent`, sorted.
    public func paths(with interface: String, below parent: String) -> [String] {
        let prefix = parent + "/"
        return self.paths(with: interface).filter { $0.hasPrefix(prefix) }
    }

    public mutating func removeAll() {
        self.objects = [:]
    }

    /// Replaces everything with a `GetManagedObjects` reply (`a{oa{sa{sv}}}`).
    ///
    /// - Returns: `false` when the reply does not have that shape (the cache is then left empty).
    @discardableResult
    public mutating func load(managedObjects value: DBusValue) -> Bool {
        self.objects = [:]
        guard let entries = value.stringDictionary else { return false }
        for (path, interfaces) in entries {
            guard let parsed = BlueZObjectCache.interfaces(interfaces) else {
                self.malformedSignals &+= 1
                continue
            }
            self.objects[path] = parsed
            self.countMalformed(parsed)
        }
        return true
    }

    /// Applies `InterfacesAdded(o, a{sa{sv}})`.
    ///
    /// - Returns: the object path, or `nil` for a malformed signal.
    public mutating func interfacesAdded(_ arguments: [DBusValue]) -> (path: String, interfaces: [String])? {
        guard arguments.count == 2, let path = arguments[0].string,
              let added = BlueZObjectCache.interfaces(arguments[1]) else {
            self.malformedSignals &+= 1
            return nil
        }
        for (name, properties) in added {
            self.objects[path, default: [:]][name] = properties
        }
        self.countMalformed(added)
        return (path, added.keys.sorted())
    }

    /// Applies `InterfacesRemoved(o, as)`.
    public mutating func interfacesRemoved(_ arguments: [DBusValue]) -> (path: String, interfaces: [String])? {
        guard arguments.count == 2, let path = arguments[0].string,
              let names = arguments[1].arrayElements?.compactMap(\.string) else {
            self.malformedSignals &+= 1
            return nil
        }
        for name in names {
            self.objects[path]?[name] = nil
        }
        if self.objects[path]?.isEmpty == true { self.objects[path] = nil }
        return (path, names)
    }

    /// Applies `PropertiesChanged(s, a{sv}, as)` received for `path`.
    ///
    /// - Returns: the interface and the names that changed or were invalidated; `nil` when malformed or for an
    ///   object/interface we do not know (BlueZ announces objects before their changes).
    public mutating func propertiesChanged(path: String, _ arguments: [DBusValue])
        -> (interface: String, names: [String])?
    {
        guard arguments.count == 3, let interface = arguments[0].string,
              let changed = arguments[1].stringDictionary,
              let invalidated = arguments[2].arrayElements?.compactMap(\.string) else {
            self.malformedSignals &+= 1
            return nil
        }
        guard self.objects[path]?[interface] != nil else { return nil }
        var names: [String] = []
        var changedProperties: Properties = [:]
        for (name, value) in changed {
            self.objects[path]?[interface]?[name] = value.unwrapped
            changedProperties[name] = value.unwrapped
            names.append(name)
        }
        if interface != BlueZNames.gattService && interface != BlueZNames.gattCharacteristic
            || changedProperties["UUID"] != nil
        {
            self.malformedIdentifiers &+= UInt64(BlueZIdentifiers.malformed(interface: interface, changedProperties))
        }
        for name in invalidated {
            self.objects[path]?[interface]?[name] = nil
            names.append(name)
        }
        return (interface, names)
    }

    mutating func countMalformed(_ interfaces: [String: Properties]) {
        for (name, properties) in interfaces {
            self.malformedIdentifiers &+= UInt64(BlueZIdentifiers.malformed(interface: name, properties))
        }
    }

    // MARK: Typed views

    public func adapter(at path: String) -> BlueZAdapterInfo? {
        self.properties(path, BlueZNames.adapter).map { BlueZAdapterInfo(path: path, properties: $0) }
    }

    public func device(at path: String) -> BlueZDeviceInfo? {
        self.properties(path, BlueZNames.device).map { BlueZDeviceInfo(path: path, properties: $0) }
    }

    /// The GATT characteristics below `device` that have a valid UUID.
    public func characteristics(of device: String) -> [BlueZCharacteristicInfo] {
        self.paths(with: BlueZNames.gattCharacteristic, below: device).compactMap { path in
            self.properties(path, BlueZNames.gattCharacteristic)
                .flatMap { BlueZCharacteristicInfo(path: path, properties: $0) }
        }
    }

    static func interfaces(_ value: DBusValue) -> [String: Properties]? {
        guard let entries = value.stringDictionary else { return nil }
        var out: [String: Properties] = [:]
        for (name, properties) in entries {
            guard let pairs = properties.stringDictionary else { return nil }
            var props: Properties = [:]
            for (key, value) in pairs { props[key] = value.unwrapped }
            out[name] = props
        }
        return out
    }
}
