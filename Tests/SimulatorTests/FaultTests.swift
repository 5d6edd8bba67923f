#if canImport(Glibc)
import Glibc
#endif
import DBus
import E4
import Testing

@testable import Simulator

/// Faults through the control interface, the advertisement monitor, and scenario-scheduled faults.
@Suite(.serialized) struct FaultTests {
    @Test func disconnectFaultDropsTheLinkAndHangsUpTheFd() throws {
        let h = try SimulatorHarness(devices: 1)
        defer { h.close() }
        try h.discoverAndConnect()
        guard let reader = try h.acquireNotify(0x3EA1) else { return }
        defer { reader.close() }
        #expect(h.errorName(h.writeStart()) == nil)
        #expect(h.wait { reader.packets.count >= 2 })
        #expect(h.errorName(h.control("Disconnect", [.string("00:07:80:A0:01:01")])) == nil)
        #expect(h.wait { reader.hungUp })
        #expect(h.property(SimulatorHarness.device1, "org.bluez.Device1", "Connected") == .boolean(false))
        #expect(h.property(SimulatorHarness.device1, "org.bluez.Device1", "ServicesResolved") == .boolean(false))
        #expect(h.signals.contains { $0.member == "PropertiesChanged" && $0.path == SimulatorHarness.device1
            && $0.arguments.dropFirst().first?.stringKeyed?["Connected"]?.bool == false })
        #expect(h.errorName(h.control("Disconnect", [.string("ffffff")])) != nil)
    }

    @Test func adapterPowerCycleComesBack() throws {
        let h = try SimulatorHarness(devices: 1)
        defer { h.close() }
        try h.discoverAndConnect()
        #expect(h.errorName(h.control("PowerCycle", [.double(0.3)])) == nil)
        #expect(h.property(SimulatorHarness.adapter, "org.bluez.Adapter1", "Powered") == .boolean(false))
        #expect(h.property(SimulatorHarness.device1, "org.bluez.Device1", "Connected") == .boolean(false))
        #expect(h.property(SimulatorHarness.adapter, "org.bluez.Adapter1", "Discovering") == .boolean(false))
        #expect(h.wait { h.simulator.powered })
        #expect(h.property(SimulatorHarness.adapter, "org.bluez.Adapter1", "Powered") == .boolean(true))
        // A client may power the adapter itself, as the agent's watchdog does.
        #expect(h.errorName(h.call(SimulatorHarness.adapter, "org.freedesktop.DBus.Properties", "Set",
                                   [.string("org.bluez.Adapter1"), .string("Powered"), .variant(.boolean(false))]))
            == nil)
        #expect(h.stats()["powered"] == .boolean(false))
    }

    @Test func serviceRestartChangesTheOwnerAndRestoresTheObjects() throws {
        let h = try SimulatorHarness(devices: 1)
        defer { h.close() }
        var owners: [String?] = []
        _ = try h.client.watchNameOwner(Simulator.busName) { owners.append($0) }
        #expect(h.wait { !owners.isEmpty })
        let before = try #require(owners.last ?? nil)
        try h.discoverAndConnect()
        #expect(h.errorName(h.control("RestartService", [.double(0.3)])) == nil)
        #expect(h.wait { owners.contains { $0 == nil } })
        #expect(h.wait { (owners.last ?? nil) != nil })
        let after = try #require(owners.last ?? nil)
        #expect(after != before)
        let objects = h.managedObjects()
        #expect(objects[SimulatorHarness.adapter]?["org.bluez.Adapter1"]?["Powered"] == .boolean(true))
        // A restarted bluetoothd knows no temporary devices; they come back with discovery.
        #expect(objects[SimulatorHarness.device1] == nil)
        #expect(h.stats()["restarts"] == .uint32(1))
        #expect(h.errorName(h.call(SimulatorHarness.adapter, "org.bluez.Adapter1", "StartDiscovery")) == nil)
        #expect(h.wait { h.managedObjects()[SimulatorHarness.device1] != nil })
    }

    @Test func packetLossLeavesCounterGapsThatTheTruthRecords() throws {
        let h = try SimulatorHarness(devices: 1)
        defer { h.close() }
        try h.discoverAndConnect()
        guard let reader = try h.acquireNotify(0x3EA3) else { return }
        defer { reader.close() }
        #expect(h.errorName(h.control("SetPacketLoss", [.string("*"), .double(0.5)])) == nil)
        #expect(h.errorName(h.writeStart()) == nil)
        h.run(for: 2.5)
        var decoder = E4ACCDecoder()
        for packet in reader.packets {
            var decoded = E4ACCPacket()
            _ = try packet.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws(E4DecodeError) in
                try decoder.decode(raw, into: &decoded)
            }
        }
        let rows = h.truthRows("acc.csv")
        let lostPackets = Set(rows.filter { $0[6] == "1" }.map { $0[4] })
        let receivedCounters = Set(reader.packets.map { String(UInt16($0[18]) | UInt16($0[19]) << 8) })
        #expect(!lostPackets.isEmpty)
        #expect(lostPackets.isDisjoint(with: receivedCounters))
        #expect(decoder.statistics.lostPackets > 0)
        let stats = try #require(h.stats()["devices"]?.stringKeyed?["a00101"]?.stringKeyed)
        #expect((stats["lost"]?.int64 ?? 0) > 0)
    }

    @Test func advertisementMonitorReportsFoundAndLost() throws {
        var scenario = SimulatorHarness.fastScenario()
        scenario.timing.monitorLostSeconds = 1
        let h = try SimulatorHarness(devices: 1, scenario: scenario)
        defer { h.close() }
        var calls: [(String, String)] = []
        try h.client.objects.addObjectManager(at: "/monitor")
        try h.client.objects.export("/monitor/m0", interfaces: [
            DBusInterface(name: "org.bluez.AdvertisementMonitor1", properties: [
                ("Type", DBusProperty(.string("or_patterns"))),
                ("Patterns", DBusProperty(.array(element: "(yyay)", [
                    .structure([.byte(0), .byte(0x09), .bytes(Array("Empatica".utf8))]),
                ]))),
            ], methods: [
                DBusMethod("Activate") { call in calls.append(("Activate", "")); call.reply() },
                DBusMethod("Release") { call in calls.append(("Release", "")); call.reply() },
                DBusMethod("DeviceFound", in: "o") { call in
                    calls.append(("DeviceFound", call.arguments[0].string ?? "")); call.reply()
                },
                DBusMethod("DeviceLost", in: "o") { call in
                    calls.append(("DeviceLost", call.arguments[0].string ?? "")); call.reply()
                },
            ]),
        ])
        #expect(h.property(SimulatorHarness.adapter, "org.bluez.AdvertisementMonitorManager1",
                           "SupportedMonitorTypes") == .strings(["or_patterns"]))
        #expect(h.errorName(h.call(SimulatorHarness.adapter, "org.bluez.AdvertisementMonitorManager1",
                                   "RegisterMonitor", [.objectPath("/monitor")])) == nil)
        #expect(h.wait { calls.contains { $0.0 == "DeviceFound" } })
        #expect(calls.first?.0 == "Activate")
        #expect(calls.contains { $0 == ("DeviceFound", SimulatorHarness.device1) })
        // No discovery was needed.
        #expect(h.stats()["discovering"] == .boolean(false))
        #expect(h.errorName(h.control("SetOutOfRange", [.string("1"), .double(30)])) == nil)
        #expect(h.wait { calls.contains { $0.0 == "DeviceLost" } })
    }

    @Test func scenarioFaultsRunOnSchedule() throws {
        var scenario = SimulatorHarness.fastScenario()
        scenario.faults = [ScheduledFault(at: 0.2, action: .powerOff(seconds: 0.3))]
        let h = try SimulatorHarness(devices: 1, scenario: scenario)
        defer { h.close() }
        #expect(h.wait { !h.simulator.powered })
        #expect(h.wait { h.simulator.powered })
        #expect(h.stats()["faults_applied"] == .uint32(1))
    }
}

/// Control input from peers is never trusted.
@Suite(.serialized) struct ControlInputTests {
    @Test func nonFiniteNumbersAreHarmless() throws {
        let h = try SimulatorHarness(devices: 1)
        defer { h.close() }
        #expect(h.errorName(h.control("SetOutOfRange", [.string("*"), .double(.nan)])) == nil)
        #expect(h.errorName(h.control("PowerCycle", [.double(.infinity)])) == nil)
        #expect(h.errorName(h.control("SetPacketLoss", [.string("*"), .double(-.infinity)])) == nil)
        #expect(h.wait { h.simulator.powered })
        #expect(h.stats()["service_up"] == .boolean(true))
    }
}
