/// The objects a connection exports, with the standard interfaces peers expect: `Properties` (Get, GetAll, Set,
/// PropertiesChanged), `ObjectManager` (GetManagedObjects, InterfacesAdded/Removed) at chosen roots, and
/// `Introspectable`.
public final class DBusObjectServer {
    static let propertiesInterface = "org.freedesktop.DBus.Properties"
    static let objectManagerInterface = "org.freedesktop.DBus.ObjectManager"
    static let introspectableInterface = "org.freedesktop.DBus.Introspectable"

    unowned let connection: DBusConnection
    /// Exported objects by path; each object's interfaces in registration order.
    var objects: [String: [DBusInterface]] = [:]
    var managerRoots: [String] = []

    init(connection: DBusConnection) {
        self.connection = connection
    }

    // MARK: Exporting

    /// Adds interfaces to the object at `path` (creating it) and announces them with `InterfacesAdded` to any
    /// object manager above it. An interface already there is replaced.
    ///
    /// - Throws: ``DBusError`` `InvalidArgs` for an invalid path or interface name.
    public func export(_ path: String, interfaces: [DBusInterface]) throws(DBusError) {
        guard DBusNames.isValidObjectPath(path) else { throw .invalidArgs("invalid object path \"\(path)\"") }
        for interface in interfaces where !DBusNames.isValidInterfaceName(interface.name) {
            throw .invalidArgs("invalid interface name \"\(interface.name)\"")
        }
        var existing = self.objects[path] ?? []
        for interface in interfaces {
            if let index = existing.firstIndex(where: { $0.name == interface.name }) {
                existing[index] = interface
            } else {
                existing.append(interface)
            }
        }
        self.objects[path] = existing
        let added = DBusValue.dictionary(key: "s", value: "a{sv}", interfaces.map {
            .init(.string($0.name), $0.propertyDictionary)
        })
        self.announce(path, member: "InterfacesAdded", payload: added)
    }

    /// Removes interfaces from the object at `path` (all of them when `names` is `nil`), announcing
    /// `InterfacesRemoved`.
    public func unexport(_ path: String, interfaces names: [String]? = nil) {
        guard let existing = self.objects[path] else { return }
        let removed = names ?? existing.map(\.name)
        let remaining = existing.filter { !removed.contains($0.name) }
        self.objects[path] = remaining.isEmpty ? nil : remaining
        let present = removed.filter { name in existing.contains { $0.name == name } }
        guard !present.isEmpty else { return }
        self.announce(path, member: "InterfacesRemoved", payload: .strings(present))
    }

    /// Serves `org.freedesktop.DBus.ObjectManager` at `path` for every object below it.
    public func addObjectManager(at path: String) throws(DBusError) {
        guard DBusNames.isValidObjectPath(path) else { throw .invalidArgs("invalid object path \"\(path)\"") }
        if !self.managerRoots.contains(path) { self.managerRoots.append(path) }
    }

    /// Whether an object is exported at `path`.
    public func isExported(_ path: String) -> Bool { self.objects[path] != nil }

    /// A property's current value.
    public func property(_ path: String, interface: String, name: String) -> DBusValue? {
        guard let interfaces = self.objects[path], let found = interfaces.first(where: { $0.name == interface }),
              let index = found.propertyIndex(name) else { return nil }
        return found.properties[index].property.value
    }

    /// Sets a property and emits `PropertiesChanged` when the value changed (an absent value is announced as
    /// invalidated, as BlueZ does).
    ///
    /// - Returns: whether the property exists.
    @discardableResult
    public func setProperty(_ path: String, interface: String, name: String, value: DBusValue?,
                            emit: Bool = true) -> Bool {
        guard var interfaces = self.objects[path],
              let interfaceIndex = interfaces.firstIndex(where: { $0.name == interface }),
              let index = interfaces[interfaceIndex].propertyIndex(name) else { return false }
        let old = interfaces[interfaceIndex].properties[index].property.value
        interfaces[interfaceIndex].properties[index].property.value = value
        self.objects[path] = interfaces
        guard emit, old != value else { return true }
        let changed: [(String, DBusValue)] = value.map { [(name, $0)] } ?? []
        let invalidated: [String] = value == nil ? [name] : []
        try? self.connection.emitSignal(path: path, interface: DBusObjectServer.propertiesInterface,
                                        member: "PropertiesChanged",
                                        arguments: [.string(interface), .properties(changed), .strings(invalidated)])
        return true
    }

    func announce(_ path: String, member: String, payload: DBusValue) {
        for root in self.managerRoots where DBusObjectServer.isBelow(path, root: root) {
            try? self.connection.emitSignal(path: root, interface: DBusObjectServer.objectManagerInterface,
                                            member: member, arguments: [.objectPath(path), payload])
        }
    }

    static func isBelow(_ path: String, root: String) -> Bool {
        guard path != root else { return false }
        return root == "/" ? path.hasPrefix("/") : path.hasPrefix(root + "/")
    }

    // MARK: Handling calls

    /// Handles a method call addressed to an exported object.
    ///
    /// - Returns: `false` when no object or interface here serves it (libdbus then answers `UnknownMethod`).
    func handle(_ message: DBusMessage) -> Bool {
        guard let path = message.path, let member = message.member else { return false }
        let arguments: [DBusValue]
        do {
            arguments = try message.arguments()
        } catch {
            return false
        }
        let call = DBusMethodCall(message: message, arguments: arguments, connection: self.connection)
        let handled = self.route(call, path: path, member: member)
        if !handled {
            // libdbus answers `UnknownMethod`; the call object must not answer as well.
            call.markAnswered()
        }
        return handled
    }

    func route(_ call: DBusMethodCall, path: String, member: String) -> Bool {
        let message = call.message
        switch message.interface {
        case DBusObjectServer.propertiesInterface?:
            guard self.objects[path] != nil else { return self.unknownObject(call, path) }
            self.handleProperties(call, path: path, member: member)
            return true
        case DBusObjectServer.objectManagerInterface?:
            guard self.managerRoots.contains(path), member == "GetManagedObjects" else { return false }
            guard message.signature.isEmpty else { return self.invalidArgs(call, expected: "") }
            call.reply([self.managedObjects(below: path)])
            return true
        case DBusObjectServer.introspectableInterface?:
            guard member == "Introspect" else { return false }
            call.reply([.string(self.introspect(path))])
            return true
        default:
            break
        }
        guard let interfaces = self.objects[path] else { return false }
        let candidates = message.interface.map { name in interfaces.filter { $0.name == name } } ?? interfaces
        for interface in candidates {
            guard let method = interface.methods.first(where: { $0.name == member }) else { continue }
            guard message.signature == method.inSignature else {
                return self.invalidArgs(call, expected: method.inSignature)
            }
            method.handler(call)
            return true
        }
        return false
    }

    func unknownObject(_ call: DBusMethodCall, _ path: String) -> Bool {
        call.fail(DBusError(name: DBusError.unknownObjectName, message: "no object at \(path)"))
        return true
    }

    func invalidArgs(_ call: DBusMethodCall, expected: String) -> Bool {
        call.fail(DBusError(name: DBusError.invalidArgsName,
                            message: "Invalid arguments in method call: expected signature \"\(expected)\", "
                                + "got \"\(call.message.signature)\""))
        return true
    }

    func handleProperties(_ call: DBusMethodCall, path: String, member: String) {
        let interfaces = self.objects[path] ?? []
        let arguments = call.arguments
        func find(_ name: String?) -> DBusInterface? {
            guard let name else { return nil }
            return interfaces.first { $0.name == name }
        }
        switch (member, call.message.signature) {
        case ("Get", "ss"):
            guard let interface = find(arguments[0].string) else {
                return call.fail(.init(name: DBusError.invalidArgsName,
                                       message: "No such interface '\(arguments[0].string ?? "")'"))
            }
            let name = arguments[1].string ?? ""
            guard let index = interface.propertyIndex(name), let value = interface.properties[index].property.value
            else {
                return call.fail(.init(name: DBusError.invalidArgsName, message: "No such property '\(name)'"))
            }
            call.reply([.variant(value)])
        case ("GetAll", "s"):
            guard let interface = find(arguments[0].string) else {
                // Standard interfaces have no properties; BlueZ answers them with an empty dictionary.
                return call.reply([.properties([])])
            }
            call.reply([interface.propertyDictionary])
        case ("Set", "ssv"):
            guard let interface = find(arguments[0].string) else {
                return call.fail(.init(name: DBusError.invalidArgsName,
                                       message: "No such interface '\(arguments[0].string ?? "")'"))
            }
            let name = arguments[1].string ?? ""
            guard let index = interface.propertyIndex(name) else {
                return call.fail(.init(name: DBusError.invalidArgsName, message: "No such property '\(name)'"))
            }
            guard let setter = interface.properties[index].property.setter else {
                return call.fail(.init(name: DBusError.propertyReadOnlyName, message: "Property '\(name)' is read-only"))
            }
            let value = arguments[2].unwrapped
            if let current = interface.properties[index].property.value, current.signature != value.signature {
                return call.fail(.init(name: DBusError.invalidArgsName,
                                       message: "Property '\(name)' has type \(current.signature)"))
            }
            if let error = setter(value) {
                return call.fail(error)
            }
            self.setProperty(path, interface: interface.name, name: name, value: value)
            call.reply()
        case ("Get", _), ("GetAll", _), ("Set", _):
            _ = self.invalidArgs(call, expected: member == "Get" ? "ss" : member == "GetAll" ? "s" : "ssv")
        default:
            call.fail(.init(name: DBusError.unknownMethodName, message: "no method \(member) on Properties"))
        }
    }

    /// `a{oa{sa{sv}}}` of every object below `root`, in path order, with BlueZ's listing of the standard
    /// interfaces first and last.
    func managedObjects(below root: String) -> DBusValue {
        let paths = self.objects.keys.filter { DBusObjectServer.isBelow($0, root: root) }.sorted()
        return .dictionary(key: "o", value: "a{sa{sv}}", paths.map { path in
            var entries: [DBusValue.DictionaryEntry] = [
                .init(.string(DBusObjectServer.introspectableInterface), .properties([]))
            ]
            for interface in self.objects[path] ?? [] {
                entries.append(.init(.string(interface.name), interface.propertyDictionary))
            }
            entries.append(.init(.string(DBusObjectServer.propertiesInterface), .properties([])))
            return .init(.objectPath(path), .dictionary(key: "s", value: "a{sv}", entries))
        })
    }

    func introspect(_ path: String) -> String {
        var xml = "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\"\n"
        xml += "\"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n<node>\n"
        xml += "<interface name=\"\(DBusObjectServer.introspectableInterface)\"><method name=\"Introspect\">"
        xml += "<arg name=\"xml\" type=\"s\" direction=\"out\"/></method></interface>\n"
        for interface in self.objects[path] ?? [] {
            xml += "<interface name=\"\(interface.name)\">"
            for method in interface.methods {
                xml += "<method name=\"\(method.name)\">"
                for code in DBusObjectServer.splitSignature(method.inSignature) {
                    xml += "<arg type=\"\(code)\" direction=\"in\"/>"
                }
                for code in DBusObjectServer.splitSignature(method.outSignature) {
                    xml += "<arg type=\"\(code)\" direction=\"out\"/>"
                }
                xml += "</method>"
            }
            for entry in interface.properties {
                let type = entry.property.value?.signature ?? "v"
                let access = entry.property.setter == nil ? "read" : "readwrite"
                xml += "<property name=\"\(entry.name)\" type=\"\(type)\" access=\"\(access)\"/>"
            }
            xml += "</interface>\n"
        }
        if self.managerRoots.contains(path) {
            xml += "<interface name=\"\(DBusObjectServer.objectManagerInterface)\"><method name=\"GetManagedObjects\">"
            xml += "<arg type=\"a{oa{sa{sv}}}\" direction=\"out\"/></method></interface>\n"
        }
        var children: [String] = []
        for other in self.objects.keys.sorted() where DBusObjectServer.isBelow(other, root: path) {
            let rest = other.dropFirst(path == "/" ? 1 : path.count + 1)
            let child = String(rest.prefix { $0 != "/" })
            if !children.contains(child) { children.append(child) }
        }
        for child in children { xml += "<node name=\"\(child)\"/>\n" }
        return xml + "</node>\n"
    }

    /// Splits a signature into complete types (`a{sv}s` → `a{sv}`, `s`).
    static func splitSignature(_ signature: String) -> [String] {
        var out: [String] = []
        var current = ""
        var depth = 0
        for character in signature {
            current.append(character)
            switch character {
            case "(", "{": depth += 1
            case ")", "}": depth -= 1
            case "a": continue
            default: break
            }
            if depth == 0 {
                out.append(current)
                current = ""
            }
        }
        return out
    }
}

extension DBusConnection {
    /// The connection's exported objects (created on first use).
    public var objects: DBusObjectServer {
        if let server = self.objectServer { return server }
        let server = DBusObjectServer(connection: self)
        self.objectServer = server
        return server
    }
}
