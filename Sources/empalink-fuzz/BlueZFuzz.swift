import BlueZ
import CDBus
@testable import DBus
import EmpaLink
import Glibc

/// The D-Bus boundary with BlueZ (SPEC §5, §12, §15): the input is a stream of marshalled D-Bus messages, each
/// demarshalled by libdbus (which checks the wire format, as it does for what the bus delivers) and then read by our
/// code: `DBusMessage.arguments()` into `DBusValue`s, dispatched like `BlueZClient` does (a method return is a
/// `GetManagedObjects` reply; `InterfacesAdded`, `InterfacesRemoved` and `PropertiesChanged` signals update the
/// cache) and every object is read through the typed views — properties of wrong types, huge arrays, missing keys,
/// bogus object paths and UUIDs included.
enum BlueZFuzz {
    static let target = FuzzTarget(
        name: "bluez",
        summary: "marshalled D-Bus messages: libdbus demarshal, arguments(), BlueZObjectCache, typed views"
    ) { bytes in
        guard let base = bytes.baseAddress else { return }
        var cache = BlueZObjectCache()
        var offset = 0
        var messages = 0
        while bytes.count - offset >= 16, messages < 32 {
            let start = base.advanced(by: offset).assumingMemoryBound(to: CChar.self)
            let needed = Int(dbus_message_demarshal_bytes_needed(start, Int32(clamping: bytes.count - offset)))
            guard needed > 0, needed <= bytes.count - offset else { break }
            offset += needed
            messages += 1
            var error = CDBus.DBusError()
            dbus_error_init(&error)
            defer { dbus_error_free(&error) }
            guard let raw = dbus_message_demarshal(start, Int32(needed), &error) else { continue }
            Self.apply(DBusMessage(owning: raw), to: &cache)
        }
        Self.readAll(cache)
    }

    static func apply(_ message: DBusMessage, to cache: inout BlueZObjectCache) {
        _ = message.signature
        _ = message.error
        guard let arguments = try? message.arguments() else { return }
        for argument in arguments { Self.closeDescriptors(argument) }
        switch (message.kind, message.member) {
        case (.methodReturn, _):
            if let first = arguments.first { cache.load(managedObjects: first) }
        case (.signal, "InterfacesAdded"):
            _ = cache.interfacesAdded(arguments)
        case (.signal, "InterfacesRemoved"):
            _ = cache.interfacesRemoved(arguments)
        case (.signal, "PropertiesChanged"):
            if let path = message.path { _ = cache.propertiesChanged(path: path, arguments) }
        default:
            break
        }
    }

    /// Reads every object as the agent does: adapters, devices (and whether a profile recognises them) and the
    /// characteristics below each.
    static func readAll(_ cache: BlueZObjectCache) {
        for path in cache.paths(with: BlueZNames.adapter) {
            _ = cache.adapter(at: path)
            for device in cache.paths(with: BlueZNames.device, below: path) { _ = cache.device(at: device) }
        }
        for path in cache.paths(with: BlueZNames.device) {
            guard let device = cache.device(at: path) else { continue }
            for profile in ProfileFuzz.profiles {
                _ = profile.recognizes(name: device.name, serviceUUIDs: device.serviceUUIDs)
            }
            _ = cache.characteristics(of: path)
        }
        _ = cache.malformedIdentifiers
    }

    /// A demarshalled message carries no descriptors, but a `h` value read from one would be ours to close.
    static func closeDescriptors(_ value: DBusValue) {
        switch value {
        case .unixFD(let fd): if fd >= 0 { _ = Glibc.close(fd) }
        case .variant(let inner): Self.closeDescriptors(inner)
        case .array(_, let items): items.forEach(Self.closeDescriptors)
        case .structure(let fields): fields.forEach(Self.closeDescriptors)
        case .dictionary(_, _, let entries):
            for entry in entries {
                Self.closeDescriptors(entry.key)
                Self.closeDescriptors(entry.value)
            }
        default: break
        }
    }
}
