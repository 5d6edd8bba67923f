import DBus
import EventLoop
import Foundation
import Posix
import Testing
import TestSupport

@testable import Simulator

/// A board with several adapters (`--adapters N`, a ward board's `adapters`; SPEC §18): each adapter is its own
/// `Adapter1` with its own view of the wristbands, and a wristband still takes one central at a time.
@Suite(.serialized) struct MultiAdapterTests {
    static let hci1 = "/org/bluez/hci1"
    static let device1OnHci1 = "/org/bluez/hci1/dev_00_07_80_A0_01_01"

    /// The device objects below `adapter` in `GetManagedObjects`.
    static func devicePaths(_ objects: [String: [String: [String: DBusValue]]], under adapter: String) -> [String] {
        objects.filter { $0.value["org.bluez.Device1"] != nil && $0.key.hasPrefix(adapter + "/") }.keys.sorted()
    }

    @Test func everyAdapterIsListedWithItsOwnAddressAndMonitorManager() throws {
        let h = try SimulatorHarness(devices: 1, adapters: 2)
        defer { h.close() }
        let objects = h.managedObjects()
        let adapters = objects.filter { $0.value["org.bluez.Adapter1"] != nil }
        #expect(adapters.keys.sorted() == [SimulatorHarness.adapter, Self.hci1])
        let addresses = adapters.values.compactMap { $0["org.bluez.Adapter1"]?["Address"]?.string }
        #expect(Set(addresses) == ["00:E0:4C:53:49:4D", "00:E0:4C:53:49:4E"], "distinct and stable")
        #expect(adapters.values.allSatisfy { $0["org.bluez.AdvertisementMonitorManager1"] != nil })
        #expect(adapters.values.allSatisfy { $0["org.bluez.Adapter1"]?["Powered"] == .boolean(true) })
        #expect(h.simulator.wristbands.count == 1 && h.simulator.devices.count == 2)
    }

    @Test func discoveryOnOneAdapterSurfacesDevicesOnlyUnderIt() throws {
        let h = try SimulatorHarness(devices: 2, adapters: 2)
        defer { h.close() }
        #expect(h.errorName(h.call(Self.hci1, "org.bluez.Adapter1", "StartDiscovery")) == nil)
        #expect(h.wait { Self.devicePaths(h.managedObjects(), under: Self.hci1).count == 2 })
        h.run(for: 1.2)
        let objects = h.managedObjects()
        #expect(Self.devicePaths(objects, under: SimulatorHarness.adapter).isEmpty, "hci0 is not discovering")
        #expect(objects[Self.device1OnHci1]?["org.bluez.Device1"]?["Adapter"] == .objectPath(Self.hci1))
        #expect(objects[Self.device1OnHci1]?["org.bluez.Device1"]?["RSSI"] != nil)
        #expect(h.property(Self.hci1, "org.bluez.Adapter1", "Discovering") == .boolean(true))
        #expect(h.property(SimulatorHarness.adapter, "org.bluez.Adapter1", "Discovering") == .boolean(false))
        // Sessions are per adapter: the same client may start discovery on hci0 too, and stop it on hci1 alone.
        #expect(h.errorName(h.call(SimulatorHarness.adapter, "org.bluez.Adapter1", "StartDiscovery")) == nil)
        #expect(h.errorName(h.call(Self.hci1, "org.bluez.Adapter1", "StopDiscovery")) == nil)
        #expect(h.property(Self.hci1, "org.bluez.Adapter1", "Discovering") == .boolean(false))
        #expect(h.property(SimulatorHarness.adapter, "org.bluez.Adapter1", "Discovering") == .boolean(true))
        #expect(h.wait { Self.devicePaths(h.managedObjects(), under: SimulatorHarness.adapter).count == 2 })
        let adapters = h.stats()["adapters"]?.stringKeyed
        #expect(adapters?["hci1"]?.stringKeyed?["discovering"]?.unwrapped == .boolean(false))
        #expect(adapters?["hci0"]?.stringKeyed?["discovering"]?.unwrapped == .boolean(true))
    }

    @Test func aWristbandConnectedThroughOneAdapterTimesOutOnAnother() throws {
        let h = try SimulatorHarness(devices: 1, adapters: 2)
        defer { h.close() }
        #expect(h.errorName(h.call(SimulatorHarness.adapter, "org.bluez.Adapter1", "StartDiscovery")) == nil)
        #expect(h.errorName(h.call(Self.hci1, "org.bluez.Adapter1", "StartDiscovery")) == nil)
        #expect(h.wait { h.simulator.devices.allSatisfy(\.exported) }, "free, it advertises to both adapters")
        #expect(h.errorName(h.call(SimulatorHarness.device1, "org.bluez.Device1", "Connect")) == nil)

        let started = MonotonicInstant.now
        let refused = h.call(Self.device1OnHci1, "org.bluez.Device1", "Connect")
        let waited = started.duration(to: .now)
        guard case .failure(let error) = refused else {
            Issue.record("a wristband took a second central")
            return
        }
        #expect(error.name == "org.bluez.Error.Failed" && error.message == "le-connection-abort-by-local")
        #expect(waited >= .milliseconds(450), "after the connect timeout (0.5 s), as bluetoothd")
        #expect(h.property(Self.device1OnHci1, "org.bluez.Device1", "Connected") == .boolean(false))
        #expect(h.property(SimulatorHarness.device1, "org.bluez.Device1", "Connected") == .boolean(true))
        let device = h.stats()["devices"]?.stringKeyed?["a00101"]?.stringKeyed
        #expect(device?["adapter"]?.unwrapped == .string("hci0") && device?["connected"]?.unwrapped == .boolean(true))

        // Free again, it advertises to hci1, which may connect now.
        #expect(h.errorName(h.call(SimulatorHarness.device1, "org.bluez.Device1", "Disconnect")) == nil)
        #expect(h.errorName(h.call(Self.device1OnHci1, "org.bluez.Device1", "Connect")) == nil)
        #expect(h.wait { h.property(Self.device1OnHci1, "org.bluez.Device1", "ServicesResolved") == .boolean(true) })
        #expect(h.simulator.devices[0].state == .disconnected && h.simulator.devices[1].state == .connected)
    }

    @Test func powerFaultsTargetOneAdapterAndDefaultToHci0() throws {
        let h = try SimulatorHarness(devices: 1, adapters: 2)
        defer { h.close() }
        #expect(h.errorName(h.control("SetAdapterPowered", [.string("hci1"), .boolean(false)])) == nil)
        #expect(h.property(Self.hci1, "org.bluez.Adapter1", "Powered") == .boolean(false))
        #expect(h.property(SimulatorHarness.adapter, "org.bluez.Adapter1", "Powered") == .boolean(true))
        #expect(h.errorName(h.call(Self.hci1, "org.bluez.Adapter1", "StartDiscovery")) == "org.bluez.Error.NotReady")
        #expect(h.errorName(h.control("SetPowered", [.boolean(false)])) == nil, "the old method is hci0's")
        #expect(h.property(SimulatorHarness.adapter, "org.bluez.Adapter1", "Powered") == .boolean(false))
        #expect(h.errorName(h.control("SetAdapterPowered", [.string(""), .boolean(true)])) == nil, "'' is hci0")
        #expect(h.property(SimulatorHarness.adapter, "org.bluez.Adapter1", "Powered") == .boolean(true))
        #expect(h.errorName(h.control("PowerCycleAdapter", [.string("hci2"), .double(1)]))
            == Simulator.controlErrorPrefix + "InvalidArguments")
        #expect(h.errorName(h.control("PowerCycleAdapter", [.string("hci1"), .double(0.2)])) == nil)
        #expect(h.wait { h.property(Self.hci1, "org.bluez.Adapter1", "Powered") == .boolean(true) })
    }

    @Test func oneAdapterIsTheDefaultAndEightTheMost() throws {
        #expect(try SimulatorCommand.parse(["--session", "--devices", "1"]).get().adapters == 1)
        #expect(try SimulatorCommand.parse(["--session", "--devices", "1", "--adapters", "8"]).get().adapters == 8)
        for bad in ["0", "9", "x"] {
            guard case .failure = SimulatorCommand.parse(["--session", "--devices", "1", "--adapters", bad]) else {
                Issue.record("--adapters \(bad) accepted")
                continue
            }
        }
    }

    @Test func scenariosNameAdapters() throws {
        let fault = try Scenario.parse("""
            [[fault]]
            at_s = 1
            action = "power_off"
            duration_s = 2
            adapter = "hci1"
            """)
        #expect(fault.faults.map(\.action) == [.powerOff(seconds: 2, adapter: 1)])
        #expect(throws: ScenarioError.self) {
            try Scenario.parse("[[fault]]\nat_s = 1\naction = \"power_off\"\nadapter = \"hci8\"\n")
        }
        let ward = try #require(try Scenario.parse(Self.wardOfTwoAdapters).ward)
        #expect(ward.boards.map(\.adapters) == [2, 1])
        #expect(throws: ScenarioError.self) {
            try Scenario.parse("[ward]\n[[ward.board]]\nname = \"a\"\nx = 0\ny = 0\nadapters = 9\n")
        }
    }

    /// WardTests' two boards 10 m apart, board `a` with two adapters; no noise.
    static let wardOfTwoAdapters = WardTests.twoBoards.replacing("name = \"a\"\n", with: "name = \"a\"\nadapters = 2\n")

    @Test func aWardBoardWithTwoAdaptersKeepsOneLinkPerWristband() throws {
        let h = try WardHarness(Self.wardOfTwoAdapters)
        defer { h.close() }
        #expect(h.boards[0].adapters.count == 2 && h.boards[1].adapters.count == 1)
        #expect(h.startDiscovery(0) && h.startDiscovery(1))
        #expect(h.call(0, Self.hci1, "org.bluez.Adapter1", "StartDiscovery").isSuccess)
        #expect(h.wait { h.boards[0].devices.allSatisfy(\.exported) && h.exported(1) })
        // The same distance model, 2 dB lower on hci1.
        let rssi = h.boards[0].devices.map(\.rssi)
        #expect(rssi == [-77, -79], "hci0 at 4 m: −77, hci1 2 dB less")
        #expect(h.device(0, "Connect").isSuccess)
        #expect(!h.call(0, Self.device1OnHci1, "org.bluez.Device1", "Connect").isSuccess)
        #expect(!h.device(1, "Connect").isSuccess, "nor from another board")

        let text = try String(contentsOfFile: h.truthDirectory + "/ward.csv", encoding: .utf8)
        let lines = text.split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false) }
        #expect(lines.first == ["t", "wall", "board", "serial", "event", "reason", "adapter"])
        let rows = lines.dropFirst().map { "\($0[2]) \($0[4]) \($0[5]) \($0[6])" }
        #expect(rows == ["a connect  hci0", "a refused connected via hci0 hci1", "b refused connected to a hci0"])
    }
}
