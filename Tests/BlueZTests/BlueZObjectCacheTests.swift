import Testing

@testable import BlueZ
import DBus

@Suite struct BlueZObjectCacheTests {
    static let adapter = "/org/bluez/hci0"
    static let device = "/org/bluez/hci0/dev_00_07_80_A0_01_01"

    static func snapshot() -> DBusValue {
        .dictionary(key: "o", value: "a{sa{sv}}", [
            .init(.objectPath(Self.adapter), .dictionary(key: "s", value: "a{sv}", [
                .init(.string("org.freedesktop.DBus.Introspectable"), .properties([])),
                .init(.string(BlueZNames.adapter), .properties([
                    ("Address", .string("00:00:00:00:00:01")), ("Powered", .boolean(true)),
                    ("Discovering", .boolean(false)),
                ])),
            ])),
        ])
    }

    @Test func snapshotThenSignalsKeepTheCacheCurrent() {
        var cache = BlueZObjectCache()
        let loaded = cache.load(managedObjects: Self.snapshot())
        #expect(loaded)
        #expect(cache.paths(with: BlueZNames.adapter) == [Self.adapter])

        let added = cache.interfacesAdded([
            .objectPath(Self.device),
            .dictionary(key: "s", value: "a{sv}", [
                .init(.string(BlueZNames.device), .properties([
                    ("Address", .string("00:07:80:A0:01:01")), ("Name", .string("Empatica E4")),
                    ("RSSI", .int16(-61)), ("Connected", .boolean(false)), ("Adapter", .objectPath(Self.adapter)),
                ])),
            ]),
        ])
        #expect(added?.path == Self.device)
        #expect(cache.paths(with: BlueZNames.device, below: Self.adapter) == [Self.device])

        let changed = cache.propertiesChanged(path: Self.device, [
            .string(BlueZNames.device), .properties([("Connected", .boolean(true))]), .strings(["RSSI"]),
        ])
        #expect(changed?.interface == BlueZNames.device)
        #expect(Set(changed?.names ?? []) == ["Connected", "RSSI"])
        let info = BlueZDeviceInfo(path: Self.device, properties: cache.properties(Self.device, BlueZNames.device) ?? [:])
        #expect(info.connected)
        #expect(info.rssi == nil, "an invalidated RSSI is gone, as BlueZ means it")
        #expect(info.name == "Empatica E4")
        #expect(info.adapter == Self.adapter)

        let removed = cache.interfacesRemoved([.objectPath(Self.device), .strings([BlueZNames.device])])
        #expect(removed?.interfaces == [BlueZNames.device])
        #expect(cache.objects[Self.device] == nil)
    }

    @Test func malformedSignalsAreIgnoredNotTrusted() {
        var cache = BlueZObjectCache()
        cache.load(managedObjects: Self.snapshot())
        let before = cache.objects
        let addedEmpty = cache.interfacesAdded([])
        let addedWrong = cache.interfacesAdded([.string("/x"), .int32(3)])
        let removedShort = cache.interfacesRemoved([.objectPath(Self.adapter)])
        let changedShort = cache.propertiesChanged(path: Self.adapter, [.string(BlueZNames.adapter)])
        // A change for an interface we were never told about is not invented into the cache.
        let changedUnknown = cache.propertiesChanged(path: "/org/bluez/hci9", [
            .string(BlueZNames.adapter), .properties([("Powered", .boolean(true))]), .strings([]),
        ])
        #expect(addedEmpty == nil && addedWrong == nil && removedShort == nil)
        #expect(changedShort == nil && changedUnknown == nil)
        #expect(cache.objects == before)
        // The four of the wrong shape are counted; the change for an unknown object is not malformed.
        #expect(cache.malformedSignals == 4)
        let loaded = cache.load(managedObjects: .string("nonsense"))
        #expect(loaded == false)
        #expect(cache.objects.isEmpty)
    }

    @Test func deviceFieldsOfTheWrongTypeReadAsAbsent() {
        let info = BlueZDeviceInfo(path: Self.device, properties: [
            "Address": .int32(5), "RSSI": .string("loud"), "Connected": .string("yes"), "Name": .bytes([1]),
        ])
        #expect(info.address == nil)
        #expect(info.rssi == nil)
        #expect(info.connected == false)
        #expect(info.name == nil)
    }
}
