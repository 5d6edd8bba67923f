import Bluetooth
import DBus

/// The D-Bus boundary for identifiers: BlueZ's address and UUID strings become ``BluetoothAddress`` and
/// ``BluetoothUUID`` here, and nowhere else. Anything that does not parse is `nil`, never a trap.
enum BlueZIdentifiers {
    static func address(_ value: DBusValue?) -> BluetoothAddress? {
        value?.string.flatMap { BluetoothAddress($0) }
    }

    static func uuid(_ value: DBusValue?) -> BluetoothUUID? {
        value?.string.flatMap { BluetoothUUID($0) }
    }

    /// How many identifier properties of one interface's `properties` are present but malformed (wrong D-Bus type
    /// or text that does not parse); a GATT object without a `UUID` counts too, since it cannot be used.
    static func malformed(interface: String, _ properties: BlueZObjectCache.Properties) -> Int {
        var count = 0
        switch interface {
        case BlueZNames.adapter, BlueZNames.device:
            if let value = properties["Address"], Self.address(value) == nil { count += 1 }
            if interface == BlueZNames.device {
                if let value = properties["AddressType"], value.string.flatMap({ BluetoothAddressType($0) }) == nil {
                    count += 1
                }
                if let value = properties["UUIDs"] {
                    if let elements = value.arrayElements {
                        count += elements.count { Self.uuid($0) == nil }
                    } else {
                        count += 1
                    }
                }
            }
        case BlueZNames.gattService, BlueZNames.gattCharacteristic:
            if Self.uuid(properties["UUID"]) == nil { count += 1 }
        default:
            break
        }
        return count
    }
}
