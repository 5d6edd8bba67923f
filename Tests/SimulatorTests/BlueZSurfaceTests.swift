#if canImport(Glibc)
import Glibc
#endif
import DBus
import Testing

@testable import Simulator

/// The simulator's BlueZ surface checked with our D-Bus client: discovery, connect, the GATT tree and
/// bluetoothd's error replies.
@Suite(.serialized) struct BlueZSurfaceTests {
    @Test func discoveryWithFilterShowsDevicesWithRSSIAndStopClearsIt() throws {
        let h = try SimulatorHarness(devices: 2)
        defer { h.close() }
        #expect(h.property(SimulatorHarness.adapter, "org.bluez.Adapter1", "Discovering") == .boolean(false))
        let filter = DBusValue.properties([("Transport", .string("le")), ("RSSI", .int16(-100))])
        #expect(h.errorName(h.call(SimulatorHarness.adapter, "org.bluez.Adapter1", "SetDiscoveryFilter", [filter]))
            == nil)
        #expect(h.errorName(h.call(SimulatorHarness.adapter, "org.bluez.Adapter1", "StartDiscovery")) == nil)
        #expect(h.wait { h.signals.filter { $0.member == "InterfacesAdded" }.count >= 2 })
        let added = h.signals.filter { $0.member == "InterfacesAdded" }
        let paths = Set(added.compactMap { $0.arguments.first?.string })
        #expect(paths == ["/org/bluez/hci0/dev_00_07_80_A0_01_01", "/org/bluez/hci0/dev_00_07_80_A0_01_02"])
        let objects = h.managedObjects()
        let device = try #require(objects[SimulatorHarness.device1]?["org.bluez.Device1"])
        #expect(device["Name"] == .string("Empatica E4"))
        #expect(device["Address"] == .string("00:07:80:A0:01:01"))
        #expect(device["Adapter"] == .objectPath("/org/bluez/hci0"))
        #expect(device["Connected"] == .boolean(false))
        let rssi = try #require(device["RSSI"]?.int64)
        #expect((-100)...(-30) ~= rssi)
        #expect(h.property(SimulatorHarness.adapter, "org.bluez.Adapter1", "Discovering") == .boolean(true))

        #expect(h.errorName(h.call(SimulatorHarness.adapter, "org.bluez.Adapter1", "StopDiscovery")) == nil)
        #expect(h.property(SimulatorHarness.adapter, "org.bluez.Adapter1", "Discovering") == .boolean(false))
        #expect(h.managedObjects()[SimulatorHarness.device1]?["org.bluez.Device1"]?["RSSI"] == nil)
        #expect(h.wait {
            h.signals.contains { $0.member == "PropertiesChanged" && $0.path == SimulatorHarness.device1
                && $0.arguments.count == 3 && $0.arguments[2] == .strings(["RSSI"]) }
        })
    }

    @Test func rssiFilterAboveEveryDeviceFindsNothing() throws {
        let h = try SimulatorHarness(devices: 2)
        defer { h.close() }
        let filter = DBusValue.properties([("Transport", .string("le")), ("RSSI", .int16(-20))])
        _ = h.call(SimulatorHarness.adapter, "org.bluez.Adapter1", "SetDiscoveryFilter", [filter])
        _ = h.call(SimulatorHarness.adapter, "org.bluez.Adapter1", "StartDiscovery")
        h.run(for: 1.5)
        #expect(!h.signals.contains { $0.member == "InterfacesAdded" })
    }

    @Test func connectResolvesServicesAndExportsTheGATTTree() throws {
        let h = try SimulatorHarness(devices: 1)
        defer { h.close() }
        try h.discoverAndConnect()
        #expect(h.property(SimulatorHarness.device1, "org.bluez.Device1", "Connected") == .boolean(true))
        let objects = h.managedObjects()
        var services: [String: String] = [:]
        var characteristics: [String: (service: String, flags: DBusValue?)] = [:]
        for (path, interfaces) in objects {
            if let service = interfaces["org.bluez.GattService1"] {
                services[path] = service["UUID"]?.string
                #expect(service["Device"] == .objectPath(SimulatorHarness.device1))
            }
            if let characteristic = interfaces["org.bluez.GattCharacteristic1"],
               let uuid = characteristic["UUID"]?.string {
                characteristics[uuid] = (characteristic["Service"]?.string ?? "", characteristic["Flags"])
                #expect(characteristic["MTU"] != nil)
            }
        }
        #expect(Set(services.values) == ["00003ea0-0000-1000-8000-00805f9b34fb", "00003eb0-0000-1000-8000-00805f9b34fb",
                                         "00003e70-0000-1000-8000-00805f9b34fb"])
        #expect(services[SimulatorHarness.device1 + "/service000c"] == "00003ea0-0000-1000-8000-00805f9b34fb")
        func uuid(_ short: String) -> String { "0000" + short + "-0000-1000-8000-00805f9b34fb" }
        for short in ["3ea1", "3ea3", "3ea6", "3ea8", "3eb2"] {
            #expect(characteristics[uuid(short)]?.flags == .strings(["notify"]), "flags of \(short)")
        }
        #expect(characteristics[uuid("3eb3")]?.flags == .strings(["read", "notify"]))
        #expect(characteristics[uuid("3e71")]?.flags == .strings(["write"]))
        #expect(characteristics[uuid("3ea1")]?.service == SimulatorHarness.device1 + "/service000c")
        #expect(objects[h.charPath(0x3EA1)]?["org.bluez.GattCharacteristic1"]?["NotifyAcquired"] == .boolean(false))
        // Battery is readable.
        guard case .success(let read) = h.call(h.charPath(0x3EB3), "org.bluez.GattCharacteristic1", "ReadValue",
                                              [.properties([])]) else {
            Issue.record("ReadValue failed")
            return
        }
        let percent = try #require(read.first?.bytes?.first)
        #expect((0...100).contains(percent))
        // Signals came in bluetoothd's order on a real radio: Connected = true, the GATT objects, then
        // ServicesResolved (without the Connected signal on btvirt: BluetoothdFidelityTests).
        let order = h.signals.compactMap { signal -> String? in
            if signal.member == "PropertiesChanged", signal.path == SimulatorHarness.device1,
               case .dictionary(_, _, let entries)? = signal.arguments.dropFirst().first {
                return entries.compactMap { $0.key.string }.first
            }
            if signal.member == "InterfacesAdded", signal.arguments.first?.string?.contains("service") == true {
                return "gatt"
            }
            return nil
        }
        let gatt = try #require(order.firstIndex(of: "gatt"))
        let resolved = try #require(order.firstIndex(of: "ServicesResolved"))
        #expect(gatt < resolved)
        #expect(order.firstIndex(of: "Connected").map { $0 < gatt } == true, "\(order)")
    }

    @Test func errorRepliesMatchBluetoothd() throws {
        let h = try SimulatorHarness(devices: 1)
        defer { h.close() }
        let adapter = SimulatorHarness.adapter
        // StopDiscovery without a session.
        let stop = h.call(adapter, "org.bluez.Adapter1", "StopDiscovery")
        #expect(h.errorName(stop) == "org.bluez.Error.Failed")
        if case .failure(let error) = stop { #expect(error.message == "No discovery started") }
        // A second StartDiscovery from the same client.
        try h.discoverAndConnect()
        #expect(h.errorName(h.call(adapter, "org.bluez.Adapter1", "StartDiscovery")) == "org.bluez.Error.InProgress")
        // Invalid filters.
        let bad = DBusValue.properties([("Transport", .string("radio"))])
        #expect(h.errorName(h.call(adapter, "org.bluez.Adapter1", "SetDiscoveryFilter", [bad]))
            == "org.bluez.Error.InvalidArguments")
        let both = DBusValue.properties([("RSSI", .int16(-80)), ("Pathloss", .uint16(20))])
        #expect(h.errorName(h.call(adapter, "org.bluez.Adapter1", "SetDiscoveryFilter", [both]))
            == "org.bluez.Error.InvalidArguments")
        // AcquireNotify twice.
        let bvp = h.charPath(0x3EA1)
        let first = h.call(bvp, "org.bluez.GattCharacteristic1", "AcquireNotify", [.properties([])])
        guard case .success(let values) = first, case .unixFD(let fd)? = values.first else {
            Issue.record("AcquireNotify failed: \(first)")
            return
        }
        defer { _ = close(fd) }
        #expect(h.errorName(h.call(bvp, "org.bluez.GattCharacteristic1", "AcquireNotify", [.properties([])]))
            == "org.bluez.Error.NotPermitted")
        #expect(h.errorName(h.call(bvp, "org.bluez.GattCharacteristic1", "StartNotify"))
            == "org.bluez.Error.NotPermitted")
        // Not notifiable; not readable; not writable.
        #expect(h.errorName(h.call(h.charPath(0x3E71), "org.bluez.GattCharacteristic1", "AcquireNotify",
                                   [.properties([])])) == "org.bluez.Error.NotSupported")
        #expect(h.errorName(h.call(bvp, "org.bluez.GattCharacteristic1", "ReadValue", [.properties([])]))
            == "org.bluez.Error.NotPermitted")
        // bluetoothd refuses a write to a characteristic without a write flag itself.
        let write = h.call(h.charPath(0x3EB3), "org.bluez.GattCharacteristic1", "WriteValue",
                           [.bytes([1]), .properties([])])
        #expect(h.errorName(write) == "org.bluez.Error.NotSupported")
        if case .failure(let error) = write { #expect(error.message == "Operation is not supported") }
        #expect(h.errorName(h.call(bvp, "org.bluez.GattCharacteristic1", "WriteValue",
                                   [.bytes([1]), .properties([])])) == "org.bluez.Error.NotSupported")
        // A start command of the wrong length: the wristband's InvalidValueLength, renamed by bluetoothd via ATT.
        let short = h.call(h.charPath(0x3E71), "org.bluez.GattCharacteristic1", "WriteValue",
                           [.bytes([1]), .properties([])])
        #expect(h.errorName(short) == "org.bluez.Error.InvalidArguments")
        if case .failure(let error) = short { #expect(error.message == "Invalid Length") }
        #expect(h.errorName(h.call(h.charPath(0x3E71), "org.bluez.GattCharacteristic1", "WriteValue",
                                   [.bytes([1, 2]), .properties([])])) == "org.bluez.Error.InvalidArguments")
        // An unknown opcode reaches the wristband, which answers with an application error.
        let opcode = h.call(h.charPath(0x3E71), "org.bluez.GattCharacteristic1", "WriteValue",
                            [.bytes([0x7F, 0, 0, 0, 0]), .properties([])])
        #expect(h.errorName(opcode) == "org.bluez.Error.Failed")
        if case .failure(let error) = opcode { #expect(error.message == "Operation failed with ATT error: 0x80") }
        // ConnectProfile: bluetoothd tries BR/EDR's SDP, which an LE-only device fails.
        let profile = h.call(SimulatorHarness.device1, "org.bluez.Device1", "ConnectProfile",
                             [.string("0000180d-0000-1000-8000-00805f9b34fb")])
        #expect(h.errorName(profile) == "org.bluez.Error.Failed")
        if case .failure(let error) = profile { #expect(error.message == "br-connection-sdp-search") }
        // Disconnected: the GATT objects stay (bluetoothd's cache) and answer "Not connected".
        #expect(h.errorName(h.call(SimulatorHarness.device1, "org.bluez.Device1", "Disconnect")) == nil)
        let acc = h.call(h.charPath(0x3EA3), "org.bluez.GattCharacteristic1", "AcquireNotify", [.properties([])])
        #expect(h.errorName(acc) == "org.bluez.Error.Failed")
        if case .failure(let error) = acc { #expect(error.message == "Not connected") }
        // Unpowered: NotReady for discovery and connect.
        #expect(h.errorName(h.control("SetPowered", [.boolean(false)])) == nil)
        #expect(h.property(adapter, "org.bluez.Adapter1", "Powered") == .boolean(false))
        #expect(h.errorName(h.call(adapter, "org.bluez.Adapter1", "StartDiscovery")) == "org.bluez.Error.NotReady")
        #expect(h.errorName(h.call(SimulatorHarness.device1, "org.bluez.Device1", "Connect"))
            == "org.bluez.Error.NotReady")
        // RemoveDevice of an unknown path.
        #expect(h.errorName(h.call(adapter, "org.bluez.Adapter1", "RemoveDevice",
                                   [.objectPath("/org/bluez/hci0/dev_00_00_00_00_00_00")]))
            == "org.bluez.Error.DoesNotExist")
    }

    @Test func connectWhileConnectingIsInProgressAndOutOfRangeAborts() throws {
        let h = try SimulatorHarness(devices: 1)
        defer { h.close() }
        _ = h.call(SimulatorHarness.adapter, "org.bluez.Adapter1", "StartDiscovery")
        try #require(h.wait { h.simulator.devices[0].exported })
        var first: Result<[DBusValue], DBusError>?
        h.client.call(destination: Simulator.busName, path: SimulatorHarness.device1, interface: "org.bluez.Device1",
                      member: "Connect") { first = $0 }
        #expect(h.errorName(h.call(SimulatorHarness.device1, "org.bluez.Device1", "Connect"))
            == "org.bluez.Error.InProgress")
        #expect(h.wait { first != nil })
        #expect(first.map(h.errorName) == .some(nil))
        _ = h.call(SimulatorHarness.device1, "org.bluez.Device1", "Disconnect")
        #expect(h.errorName(h.control("SetOutOfRange", [.string("a00101"), .double(30)])) == nil)
        let aborted = h.call(SimulatorHarness.device1, "org.bluez.Device1", "Connect")
        #expect(h.errorName(aborted) == "org.bluez.Error.Failed")
        if case .failure(let error) = aborted { #expect(error.message == "le-connection-abort-by-local") }
    }

    @Test func discoverySessionsArePerClientAndEndWhenTheClientLeaves() throws {
        let h = try SimulatorHarness(devices: 1)
        defer { h.close() }
        let other = try DBusConnection.connect(address: h.bus.address, loop: h.loop)
        let adapter = SimulatorHarness.adapter
        #expect(h.errorName(h.call(adapter, "org.bluez.Adapter1", "StartDiscovery")) == nil)
        #expect(h.errorName(h.call(adapter, "org.bluez.Adapter1", "StartDiscovery", on: other)) == nil)
        #expect(h.stats()["discovery_sessions"] == .uint32(2))
        #expect(h.errorName(h.call(adapter, "org.bluez.Adapter1", "StopDiscovery")) == nil)
        #expect(h.property(adapter, "org.bluez.Adapter1", "Discovering") == .boolean(true))
        other.close()
        #expect(h.wait { h.simulator.discoverySessions.isEmpty })
        #expect(h.property(adapter, "org.bluez.Adapter1", "Discovering") == .boolean(false))
        let discovered = try #require(h.stats()["discovering_seconds"]?.double)
        #expect(discovered > 0)
    }

    @Test func duplicateDataAndDiscoverableAreAcceptedAndCounted() throws {
        let h = try SimulatorHarness(devices: 1)
        defer { h.close() }
        #expect(h.stats()["duplicate_data_uses"] == .uint32(0))
        let filter = DBusValue.properties([("Transport", .string("le")), ("DuplicateData", .boolean(false)),
                                           ("Discoverable", .boolean(false))])
        #expect(h.errorName(h.call(SimulatorHarness.adapter, "org.bluez.Adapter1", "SetDiscoveryFilter", [filter]))
            == nil)
        #expect(h.stats()["duplicate_data_uses"] == .uint32(1))
        #expect(h.stats()["discoverable_uses"] == .uint32(1))
    }

    @Test func injectedErrorsAnswerTheNextCalls() throws {
        let h = try SimulatorHarness(devices: 1)
        defer { h.close() }
        _ = h.call(SimulatorHarness.adapter, "org.bluez.Adapter1", "StartDiscovery")
        try #require(h.wait { h.simulator.devices[0].exported })
        #expect(h.errorName(h.control("InjectError", [.string("Connect"), .string("org.bluez.Error.Failed"),
                                                      .string("le-connection-abort-by-local"), .uint32(2)])) == nil)
        #expect(h.errorName(h.call(SimulatorHarness.device1, "org.bluez.Device1", "Connect"))
            == "org.bluez.Error.Failed")
        #expect(h.errorName(h.call(SimulatorHarness.device1, "org.bluez.Device1", "Connect"))
            == "org.bluez.Error.Failed")
        #expect(h.errorName(h.call(SimulatorHarness.device1, "org.bluez.Device1", "Connect")) == nil)
    }
}
