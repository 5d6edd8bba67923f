#if canImport(Glibc)
import Glibc
#endif
import DBus
import EventLoop
import Foundation
import Logging
import Posix
import Testing
import TestSupport

@testable import Simulator

/// A private bus, an in-process simulator and a client connection on one loop, with helpers that run the loop
/// until an answer arrives so a test reads as a sequence of steps.
final class SimulatorHarness {
    let bus: TestBus
    let loop: EventLoop
    let simulator: Simulator
    var client: DBusConnection
    let truthDirectory: String
    /// Signals from `org.bluez` (member, path, arguments), in arrival order.
    var signals: [(member: String, path: String, arguments: [DBusValue])] = []

    init(devices: Int = 2, adapters: Int = 1, scenario: Scenario = SimulatorHarness.fastScenario()) throws {
        // TestBus returns once dbus-daemon accepts connections.
        self.bus = try TestBus()
        self.loop = try EventLoop()
        self.truthDirectory = self.bus.directory + "/truth"
        self.simulator = Simulator(busAddress: self.bus.address, devices: devices, adapters: adapters, seed: 7,
                                   scenario: scenario, truthDirectory: self.truthDirectory, loop: self.loop,
                                   logger: .discarding)
        try self.simulator.start()
        self.client = try DBusConnection.connect(address: self.bus.address, loop: self.loop)
        try self.watchSignals(self.client)
    }

    /// Quick delays so tests spend little time waiting for the simulated radio.
    static func fastScenario() -> Scenario {
        var scenario = Scenario()
        scenario.timing.connectMilliseconds = 50
        scenario.timing.servicesMilliseconds = 20
        scenario.timing.disconnectMilliseconds = 20
        scenario.timing.linkDownMilliseconds = 30
        scenario.timing.connectTimeoutSeconds = 0.5
        return scenario
    }

    func watchSignals(_ connection: DBusConnection) throws {
        _ = try connection.subscribe(DBusMatchRule(sender: Simulator.busName)) { [weak self] message in
            guard let member = message.member, let path = message.path else { return }
            self?.signals.append((member, path, (try? message.arguments()) ?? []))
        }
    }

    func close() {
        self.simulator.stop()
        self.client.close()
        self.loop.close()
        self.bus.stop()
    }

    // MARK: Running the loop

    /// Runs the loop for `seconds`.
    func run(for seconds: Double) {
        self.loop.run(forSeconds: seconds)
    }

    /// Runs the loop until `condition` holds, checking every 20 ms, at most `limit` seconds.
    @discardableResult
    func wait(limit: Double = 10, _ condition: () -> Bool) -> Bool {
        self.loop.run(until: condition, limit: limit)
    }

    /// Calls a method and runs the loop until the reply.
    func call(_ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue] = [],
              on connection: DBusConnection? = nil, destination: String = Simulator.busName)
        -> Result<[DBusValue], DBusError>
    {
        var result: Result<[DBusValue], DBusError>?
        (connection ?? self.client).call(destination: destination, path: path, interface: interface, member: member,
                                         arguments: arguments, timeout: .seconds(10)) { result = $0 }
        self.wait(limit: 15) { result != nil }
        return result ?? .failure(DBusError(name: "test.Timeout", message: "no reply"))
    }

    /// `AcquireNotify` on the characteristic `uuid` of the first device and a reader on the socket it returns;
    /// `nil` (and an issue recorded) when the call fails.
    func acquireNotify(_ uuid: UInt16) throws -> NotifyReader? {
        guard case .success(let values) = self.call(self.charPath(uuid), "org.bluez.GattCharacteristic1",
                                                    "AcquireNotify", [.properties([])]),
              case .unixFD(let fd)? = values.first else {
            Issue.record("AcquireNotify on \(String(uuid, radix: 16, uppercase: true)) failed")
            return nil
        }
        return try NotifyReader(fd: fd, loop: self.loop)
    }

    /// The error name of a failed call, `nil` on success.
    func errorName(_ result: Result<[DBusValue], DBusError>) -> String? {
        if case .failure(let error) = result { return error.name }
        return nil
    }

    func property(_ path: String, _ interface: String, _ name: String) -> DBusValue? {
        guard case .success(let values) = self.call(path, "org.freedesktop.DBus.Properties", "Get",
                                                    [.string(interface), .string(name)]) else { return nil }
        return values.first?.unwrapped
    }

    /// `GetManagedObjects` as path → interface → properties.
    func managedObjects() -> [String: [String: [String: DBusValue]]] {
        guard case .success(let values) = self.call("/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects"),
              case .dictionary(_, _, let entries)? = values.first else { return [:] }
        var out: [String: [String: [String: DBusValue]]] = [:]
        for entry in entries {
            guard let path = entry.key.string, let interfaces = entry.value.stringDictionary else { continue }
            var byInterface: [String: [String: DBusValue]] = [:]
            for (name, properties) in interfaces {
                byInterface[name] = (properties.stringKeyed ?? [:]).mapValues(\.unwrapped)
            }
            out[path] = byInterface
        }
        return out
    }

    // MARK: Common steps

    static let device1 = "/org/bluez/hci0/dev_00_07_80_A0_01_01"
    static let adapter = "/org/bluez/hci0"

    func charPath(_ uuid16: UInt16, device: String = SimulatorHarness.device1) -> String {
        let handles: [UInt16: String] = [0x3EA1: "service000c/char000d", 0x3EA3: "service000c/char0010",
                                         0x3EA6: "service000c/char0013", 0x3EA8: "service000c/char0016",
                                         0x3EB2: "service0019/char001a", 0x3EB3: "service0019/char001d",
                                         0x3E71: "service0020/char0021"]
        return device + "/" + (handles[uuid16] ?? "")
    }

    /// Discovers until device 1 is on the bus, then connects and waits for `ServicesResolved` (signalled after
    /// `Connect` returned, as bluetoothd does).
    func discoverAndConnect() throws {
        try #require(self.errorName(self.call(Self.adapter, "org.bluez.Adapter1", "StartDiscovery")) == nil)
        try #require(self.wait { self.simulator.devices[0].exported })
        try #require(self.errorName(self.call(Self.device1, "org.bluez.Device1", "Connect")) == nil)
        try #require(self.wait { self.deviceSignals("ServicesResolved").contains(.boolean(true)) })
        try #require(self.property(Self.device1, "org.bluez.Device1", "ServicesResolved") == .boolean(true))
    }

    /// The `PropertiesChanged` signals of `path`'s `org.bluez.Device1`, as their changed dictionaries, in order.
    func deviceChanges(_ path: String = SimulatorHarness.device1) -> [[String: DBusValue]] {
        self.signals.compactMap { signal in
            guard signal.member == "PropertiesChanged", signal.path == path, signal.arguments.count == 3,
                  signal.arguments[0].string == "org.bluez.Device1" else { return nil }
            return (signal.arguments[1].stringKeyed ?? [:]).mapValues(\.unwrapped)
        }
    }

    /// The values `name` took in device 1's `PropertiesChanged` signals, in order.
    func deviceSignals(_ name: String) -> [DBusValue] {
        self.deviceChanges().compactMap { $0[name] }
    }

    /// Writes the start command to 3E71.
    func writeStart() -> Result<[DBusValue], DBusError> {
        let now = UInt32(Date().timeIntervalSince1970)
        let bytes: [UInt8] = [0x01, UInt8(now & 0xFF), UInt8((now >> 8) & 0xFF), UInt8((now >> 16) & 0xFF),
                              UInt8(now >> 24)]
        return self.call(self.charPath(0x3E71), "org.bluez.GattCharacteristic1", "WriteValue",
                         [.bytes(bytes), .properties([("type", .string("request"))])])
    }

    /// Calls a control method.
    func control(_ member: String, _ arguments: [DBusValue] = []) -> Result<[DBusValue], DBusError> {
        self.call(Simulator.controlPath, Simulator.controlInterface, member, arguments,
                  destination: Simulator.controlName)
    }

    func stats() -> [String: DBusValue] {
        guard case .success(let values) = self.control("Stats"), let dictionary = values.first?.stringKeyed else {
            return [:]
        }
        return dictionary.mapValues(\.unwrapped)
    }

    /// Rows of a truth CSV of device 1 (header dropped), split at commas.
    func truthRows(_ file: String, serial: String = "a00101") -> [[String]] {
        for truth in self.simulator.truths.values { truth.flush() }
        guard let text = try? String(contentsOfFile: self.truthDirectory + "/" + serial + "/" + file, encoding: .utf8)
        else { return [] }
        return text.split(separator: "\n").dropFirst().map { $0.split(separator: ",").map(String.init) }
    }
}
