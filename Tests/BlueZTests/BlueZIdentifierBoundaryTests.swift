import Bluetooth
import Testing

@testable import BlueZ
import DBus

/// BlueZ's identifier strings are parsed once, as they enter the cache; what does not parse is counted and left out
/// of the typed views, never trusted and never a trap.
@Suite struct BlueZIdentifierBoundaryTests {
    static let adapter = "/org/bluez/hci0"
    static let device = "/org/bluez/hci0/dev_C0_07_80_A0_01_01"
    static let good = "/org/bluez/hci0/dev_C0_07_80_A0_01_01/service0010/char0011"
    static let bad = "/org/bluez/hci0/dev_C0_07_80_A0_01_01/service0010/char0013"

    static func snapshot(address: DBusValue, uuids: [String], characteristicUUID: String) -> DBusValue {
        .dictionary(key: "o", value: "a{sa{sv}}", [
            .init(.objectPath(Self.device), .dictionary(key: "s", value: "a{sv}", [
                .init(.string(BlueZNames.device), .properties([
                    ("Address", address), ("AddressType", .string("random")), ("Name", .string("Strap")),
                    ("UUIDs", .strings(uuids)),
                ])),
            ])),
            .init(.objectPath(Self.good), .dictionary(key: "s", value: "a{sv}", [
                .init(.string(BlueZNames.gattCharacteristic), .properties([
                    ("UUID", .string("00002a37-0000-1000-8000-00805f9b34fb")), ("Flags", .strings(["notify"])),
                ])),
            ])),
            .init(.objectPath(Self.bad), .dictionary(key: "s", value: "a{sv}", [
                .init(.string(BlueZNames.gattCharacteristic), .properties([
                    ("UUID", .string(characteristicUUID)), ("Flags", .strings(["read"])),
                ])),
            ])),
        ])
    }

    @Test func wellFormedIdentifiersArriveTyped() throws {
        var cache = BlueZObjectCache()
        cache.load(managedObjects: Self.snapshot(
            address: .string("C0:07:80:a0:01:01"), uuids: ["0000180d-0000-1000-8000-00805f9b34fb"],
            characteristicUUID: "00002a38-0000-1000-8000-00805f9b34fb"))
        #expect(cache.malformedIdentifiers == 0)
        let info = try #require(cache.device(at: Self.device))
        #expect(info.address == BluetoothAddress(0xC0, 0x07, 0x80, 0xA0, 0x01, 0x01))
        #expect(info.addressType == .random)
        #expect(info.serviceUUIDs == [.bit16(0x180D)])
        #expect(cache.characteristics(of: Self.device).map(\.uuid) == [.bit16(0x2A37), .bit16(0x2A38)])
    }

    @Test func malformedIdentifiersAreCountedAndLeftOut() throws {
        var cache = BlueZObjectCache()
        cache.load(managedObjects: Self.snapshot(
            address: .string("C0:07:80:ZZ:01:01"),
            uuids: ["0000180d-0000-1000-8000-00805f9b34fb", "not-a-uuid", ""],
            characteristicUUID: "00002a38-0000-1000-8000-00805f9b34f"))
        // The address, two of the three service UUIDs, the characteristic's UUID.
        #expect(cache.malformedIdentifiers == 4)
        let info = try #require(cache.device(at: Self.device), "the device itself stays visible")
        #expect(info.address == nil)
        #expect(info.name == "Strap")
        #expect(info.serviceUUIDs == [.bit16(0x180D)])
        #expect(cache.characteristics(of: Self.device).map(\.path) == [Self.good])
    }

    @Test func changedIdentifiersAreCheckedAsTheyArrive() throws {
        var cache = BlueZObjectCache()
        cache.load(managedObjects: Self.snapshot(
            address: .string("C0:07:80:A0:01:01"), uuids: [], characteristicUUID: "2a38"))
        #expect(cache.malformedIdentifiers == 0)
        // Wrong D-Bus type for Address, and an unknown AddressType.
        _ = cache.propertiesChanged(path: Self.device, [
            .string(BlueZNames.device), .properties([("Address", .int32(7)), ("AddressType", .string("Public"))]),
            .strings([]),
        ])
        #expect(cache.malformedIdentifiers == 2)
        #expect(cache.device(at: Self.device)?.address == nil)
        #expect(cache.device(at: Self.device)?.addressType == nil)
        // A characteristic's value changing says nothing about its UUID: not counted.
        _ = cache.propertiesChanged(path: Self.good, [
            .string(BlueZNames.gattCharacteristic), .properties([("Value", .bytes([1, 2]))]), .strings([]),
        ])
        #expect(cache.malformedIdentifiers == 2)
        _ = cache.interfacesAdded([
            .objectPath(Self.device + "/service0020/char0021"),
            .dictionary(key: "s", value: "a{sv}", [
                .init(.string(BlueZNames.gattCharacteristic), .properties([("Flags", .strings(["notify"]))])),
            ]),
        ])
        #expect(cache.malformedIdentifiers == 3, "a characteristic without a UUID is useless, and counted")
        #expect(cache.characteristics(of: Self.device).count == 2)
    }
}
