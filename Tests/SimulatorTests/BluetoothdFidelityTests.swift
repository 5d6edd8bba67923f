#if canImport(Glibc)
import Glibc
#endif
import DBus
import Testing

@testable import Simulator

/// The habits of real bluetoothd 5.66 that the VM of issue #10 showed (`vm/FINDINGS.md`), as the simulator
/// reproduces them: signal order and shape around connect and disconnect, the negotiated MTU, error names, and a
/// foreign `StopNotify`.
@Suite(.serialized) struct BluetoothdFidelityTests {
    static let characteristic = "org.bluez.GattCharacteristic1"

    /// A fast scenario whose GATT discovery is slow enough that `Connect`'s reply and `ServicesResolved` are
    /// clearly apart.
    static func scenario(_ change: (inout Scenario) -> Void = { _ in }) -> Scenario {
        var scenario = SimulatorHarness.fastScenario()
        scenario.timing.servicesMilliseconds = 300
        change(&scenario)
        return scenario
    }

    /// Starts discovery, calls `Connect` and runs the loop until its reply.
    ///
    /// - Returns: the reply and how many signals had arrived when it did.
    func connect(_ h: SimulatorHarness) throws -> (result: Result<[DBusValue], DBusError>, signalsBefore: Int) {
        try #require(h.errorName(h.call(SimulatorHarness.adapter, "org.bluez.Adapter1", "StartDiscovery")) == nil)
        try #require(h.wait { h.simulator.devices[0].exported })
        var reply: (Result<[DBusValue], DBusError>, Int)?
        h.client.call(destination: Simulator.busName, path: SimulatorHarness.device1, interface: "org.bluez.Device1",
                      member: "Connect") { result in reply = (result, h.signals.count) }
        try #require(h.wait { reply != nil })
        let (result, count) = try #require(reply)
        return (result, count)
    }

    @Test func connectReturnsBeforeServicesResolvedAndConnectedIsNotSignalledOnBtvirt() throws {
        let h = try SimulatorHarness(devices: 1, scenario: Self.scenario { $0.bluetoothd.signalsConnected = false })
        defer { h.close() }
        let (result, signalsBefore) = try self.connect(h)
        #expect(h.errorName(result) == nil)
        // Answered with the link up and the services still unresolved.
        #expect(!h.signals.prefix(signalsBefore).contains { signal in
            signal.path == SimulatorHarness.device1 && signal.member == "PropertiesChanged"
                && signal.arguments.dropFirst().first?.stringKeyed?["ServicesResolved"] != nil
        })
        #expect(h.property(SimulatorHarness.device1, "org.bluez.Device1", "ServicesResolved") == .boolean(false))
        // Connected reads true although nothing announced it.
        #expect(h.property(SimulatorHarness.device1, "org.bluez.Device1", "Connected") == .boolean(true))
        #expect(h.managedObjects()[SimulatorHarness.device1]?["org.bluez.Device1"]?["Connected"] == .boolean(true))
        #expect(h.wait { h.deviceSignals("ServicesResolved") == [.boolean(true)] })
        #expect(h.deviceSignals("Connected").isEmpty)
        // A second Connect on the connected device returns at once.
        #expect(h.errorName(h.call(SimulatorHarness.device1, "org.bluez.Device1", "Connect")) == nil)
    }

    @Test func connectedIsSignalledBeforeServicesByDefault() throws {
        let h = try SimulatorHarness(devices: 1, scenario: Self.scenario())
        defer { h.close() }
        let (result, _) = try self.connect(h)
        #expect(h.errorName(result) == nil)
        #expect(h.wait { h.deviceSignals("ServicesResolved") == [.boolean(true)] })
        let changes = h.deviceChanges()
        let connected = try #require(changes.firstIndex { $0["Connected"] == .boolean(true) })
        let resolved = try #require(changes.firstIndex { $0["ServicesResolved"] == .boolean(true) })
        #expect(connected < resolved)
    }

    @Test func servicesCanResolveBeforeTheGATTObjectsAreAnnounced() throws {
        let h = try SimulatorHarness(devices: 1, scenario: Self.scenario {
            $0.bluetoothd.resolvesBeforeExport = true
            $0.bluetoothd.lateExportMilliseconds = 200
        })
        defer { h.close() }
        let (result, _) = try self.connect(h)
        #expect(h.errorName(result) == nil)
        #expect(h.wait { h.deviceSignals("ServicesResolved") == [.boolean(true)] })
        let signalOrder = {
            h.signals.compactMap { signal -> String? in
                if signal.member == "PropertiesChanged", signal.path == SimulatorHarness.device1,
                   signal.arguments.dropFirst().first?.stringKeyed?["ServicesResolved"] != nil {
                    return "resolved"
                }
                if signal.member == "InterfacesAdded", signal.arguments.first?.string?.contains("service") == true {
                    return "gatt"
                }
                return nil
            }
        }
        // The export sets the simulator's flag at once; its signals reach this client a moment later.
        #expect(h.wait { h.simulator.devices[0].gattExported && signalOrder().contains("gatt") })
        let order = signalOrder()
        let resolved = try #require(order.firstIndex(of: "resolved"))
        let gatt = try #require(order.firstIndex(of: "gatt"))
        #expect(resolved < gatt, "\(order)")
    }

    @Test(arguments: [nil, 23, 185] as [UInt16?])
    func acquireNotifyAndMTUCarryTheNegotiatedMTU(configured: UInt16?) throws {
        let h = try SimulatorHarness(devices: 1, scenario: Self.scenario { scenario in
            if let configured { scenario.bluetoothd.attMTU = configured }
        })
        defer { h.close() }
        let expected = configured ?? 517
        try h.discoverAndConnect()
        let bvp = h.charPath(0x3EA1)
        #expect(h.property(bvp, Self.characteristic, "MTU") == .uint16(expected))
        #expect(h.property(h.charPath(0x3E71), Self.characteristic, "MTU") == .uint16(expected))
        var reply: (Result<[DBusValue], DBusError>, Int)?
        h.client.call(destination: Simulator.busName, path: bvp, interface: Self.characteristic,
                      member: "AcquireNotify", arguments: [.properties([])]) { reply = ($0, h.signals.count) }
        try #require(h.wait { reply != nil })
        let (result, signalsBefore) = try #require(reply)
        guard case .success(let values) = result, values.count == 2, case .unixFD(let fd) = values[0] else {
            Issue.record("AcquireNotify failed: \(result)")
            return
        }
        defer { _ = close(fd) }
        #expect(values[1] == .uint16(expected))
        // NotifyAcquired = true follows the reply.
        func acquiredSignal(_ signal: (member: String, path: String, arguments: [DBusValue])) -> Bool {
            signal.member == "PropertiesChanged" && signal.path == bvp
                && signal.arguments.dropFirst().first?.stringKeyed?["NotifyAcquired"]?.unwrapped == .boolean(true)
        }
        #expect(h.wait { h.signals.contains(where: acquiredSignal) })
        #expect(!h.signals.prefix(signalsBefore).contains(where: acquiredSignal))
        // Without a link bluetoothd reads ATT's default.
        #expect(h.errorName(h.call(SimulatorHarness.device1, "org.bluez.Device1", "Disconnect")) == nil)
        #expect(h.property(bvp, Self.characteristic, "MTU") == .uint16(23))
    }

    @Test(arguments: [("Disconnect", [DBusValue.string("a00101")]),
                      ("SetOutOfRange", [DBusValue.string("a00101"), .double(5)])])
    func aRemoteDropSignalsServicesResolvedAndConnectedTogether(method: String, arguments: [DBusValue]) throws {
        let h = try SimulatorHarness(devices: 1)
        defer { h.close() }
        try h.discoverAndConnect()
        #expect(h.errorName(h.control(method, arguments)) == nil)
        #expect(h.wait { h.deviceSignals("Connected").contains(.boolean(false)) })
        h.run(for: 0.2)
        let drops = h.deviceChanges().filter {
            $0["ServicesResolved"] == .boolean(false) || $0["Connected"] == .boolean(false)
        }
        #expect(drops.count == 1)
        #expect(drops.first?["ServicesResolved"] == .boolean(false))
        #expect(drops.first?["Connected"] == .boolean(false))
    }

    @Test func aClientDisconnectSignalsServicesResolvedThenConnected() throws {
        let h = try SimulatorHarness(devices: 1)
        defer { h.close() }
        try h.discoverAndConnect()
        var reply: (Result<[DBusValue], DBusError>, [[String: DBusValue]])?
        h.client.call(destination: Simulator.busName, path: SimulatorHarness.device1, interface: "org.bluez.Device1",
                      member: "Disconnect") { reply = ($0, h.deviceChanges()) }
        try #require(h.wait { reply != nil })
        let (result, changesAtReply) = try #require(reply)
        #expect(h.errorName(result) == nil)
        #expect(h.wait { h.deviceSignals("Connected").contains(.boolean(false)) })
        let drops = h.deviceChanges().filter {
            $0["ServicesResolved"] == .boolean(false) || $0["Connected"] == .boolean(false)
        }
        #expect(drops.count == 2)
        #expect(drops.first?["ServicesResolved"] == .boolean(false) && drops.first?["Connected"] == nil)
        #expect(drops.last?["Connected"] == .boolean(false) && drops.last?["ServicesResolved"] == nil)
        // The call is answered after ServicesResolved went false and before Connected does.
        #expect(changesAtReply.contains { $0["ServicesResolved"] == .boolean(false) })
        #expect(!changesAtReply.contains { $0["Connected"] == .boolean(false) })
    }

    @Test func aForeignStopNotifyReleasesTheAcquiredFd() throws {
        let h = try SimulatorHarness(devices: 1)
        defer { h.close() }
        try h.discoverAndConnect()
        let bvp = h.charPath(0x3EA1)
        let other = try DBusConnection.connect(address: h.bus.address, loop: h.loop)
        defer { other.close() }
        // Without any notification on the characteristic, StopNotify is refused.
        let refused = h.call(bvp, Self.characteristic, "StopNotify", on: other)
        #expect(h.errorName(refused) == "org.bluez.Error.Failed")
        if case .failure(let error) = refused { #expect(error.message == "No notify session started") }
        guard case .success(let values) = h.call(bvp, Self.characteristic, "AcquireNotify", [.properties([])]),
              case .unixFD(let fd)? = values.first else {
            Issue.record("AcquireNotify failed")
            return
        }
        let reader = try NotifyReader(fd: fd, loop: h.loop)
        defer { reader.close() }
        #expect(h.errorName(h.writeStart()) == nil)
        #expect(h.wait { !reader.packets.isEmpty })
        #expect(h.errorName(h.call(bvp, Self.characteristic, "StopNotify", on: other)) == nil)
        #expect(h.wait { reader.hungUp })
        #expect(h.property(bvp, Self.characteristic, "NotifyAcquired") == .boolean(false))
        // The link stays up: the acquiring client may acquire again.
        #expect(h.property(SimulatorHarness.device1, "org.bluez.Device1", "Connected") == .boolean(true))
        guard case .success(let again) = h.call(bvp, Self.characteristic, "AcquireNotify", [.properties([])]),
              case .unixFD(let second)? = again.first else {
            Issue.record("AcquireNotify after the release failed")
            return
        }
        _ = close(second)
    }

    @Test func aScanRestartAnnouncesAnUnchangedRSSI() throws {
        let h = try SimulatorHarness(devices: 1)
        defer { h.close() }
        try #require(h.errorName(h.call(SimulatorHarness.adapter, "org.bluez.Adapter1", "StartDiscovery")) == nil)
        try #require(h.wait { h.simulator.devices[0].exported })
        h.run(for: 0.1)
        let device = h.simulator.devices[0]
        let rssi = DBusValue.int16(device.rssi)
        let before = h.deviceSignals("RSSI").count
        h.simulator.reportFound(device, scanRestarted: true)
        h.simulator.reportFound(device, scanRestarted: true)
        // Between restarts an unchanged RSSI is not announced.
        h.simulator.reportFound(device)
        h.run(for: 0.2)
        #expect(h.deviceSignals("RSSI").dropFirst(before).filter { $0 == rssi }.count == 2)
    }

    @Test(arguments: [0.0, 1.0])
    func theScanRestartsOnItsPeriod(seconds: Double) throws {
        let h = try SimulatorHarness(devices: 1, scenario: Self.scenario { $0.bluetoothd.scanRestartSeconds = seconds })
        defer { h.close() }
        try #require(h.errorName(h.call(SimulatorHarness.adapter, "org.bluez.Adapter1", "StartDiscovery")) == nil)
        let started = h.simulator.scanRestartedAt
        h.run(for: 2.5)
        #expect((h.simulator.scanRestartedAt > started) == (seconds > 0))
    }
}
