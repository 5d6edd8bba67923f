#if canImport(Glibc)
import Glibc
#endif
import DBus
import EventLoop
import Foundation
import Logging
import Testing
import TestSupport

@testable import Simulator

/// A private bus, the bluetoothd stand-in and an in-process ``PeripheralSimulator`` on one loop, with helpers that
/// run the loop until something happens, so a test reads as a sequence of steps.
final class PeripheralHarness {
    static let central = "11:22:33:44:55:66"

    let bus: TestBus
    let loop: EventLoop
    let bluetoothd: PeripheralBluetoothd
    var peripheral: PeripheralSimulator?
    var failure: SimulatorError?
    let truthDirectory: String

    init(powered: Bool = true) throws {
        self.bus = try TestBus()
        self.loop = try EventLoop()
        self.truthDirectory = self.bus.directory + "/truth"
        self.bluetoothd = PeripheralBluetoothd(loop: self.loop, busAddress: self.bus.address, powered: powered)
    }

    /// Starts the peripheral on `adapter` with a short adapter timeout.
    @discardableResult
    func startPeripheral(adapter: String = "hci0", adapterTimeout: Duration = .seconds(10)) throws
        -> PeripheralSimulator
    {
        var scenario = Scenario()
        scenario.timing.tickMilliseconds = 20
        let peripheral = PeripheralSimulator(busAddress: self.bus.address, adapter: adapter, seed: 7,
                                             scenario: scenario, truthDirectory: self.truthDirectory,
                                             adapterTimeout: adapterTimeout, callTimeout: .seconds(5),
                                             loop: self.loop, logger: .discarding)
        peripheral.onFailure = { [weak self] error in self?.failure = error }
        try peripheral.start()
        self.peripheral = peripheral
        return peripheral
    }

    /// Starts bluetoothd and the peripheral and waits until both registrations are done.
    func startRegistered() throws -> PeripheralSimulator {
        try self.bluetoothd.start()
        let peripheral = try self.startPeripheral()
        try #require(self.wait { peripheral.registration == .registered },
                     "not registered: \(String(describing: self.failure))")
        return peripheral
    }

    func close() {
        self.peripheral?.stop()
        self.bluetoothd.stop()
        self.loop.close()
        self.bus.stop()
    }

    // MARK: Running the loop

    func run(for seconds: Double) {
        self.loop.run(forSeconds: seconds)
    }

    /// Runs the loop until `condition` holds, checking every 20 ms, at most `limit` seconds.
    @discardableResult
    func wait(limit: Double = 10, _ condition: () -> Bool) -> Bool {
        self.loop.run(until: condition, limit: limit)
    }

    /// Calls a method on the peripheral's application from bluetoothd's connection, as bluetoothd does.
    func call(_ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue] = [])
        -> Result<[DBusValue], DBusError>
    {
        guard let connection = self.bluetoothd.connection, let owner = self.bluetoothd.applicationOwner else {
            return .failure(DBusError(name: "test.NotRegistered", message: "no application"))
        }
        var result: Result<[DBusValue], DBusError>?
        connection.call(destination: owner, path: path, interface: interface, member: member, arguments: arguments,
                        timeout: .seconds(5)) { result = $0 }
        self.wait(limit: 10) { result != nil }
        return result ?? .failure(DBusError(name: "test.Timeout", message: "no reply"))
    }

    func errorName(_ result: Result<[DBusValue], DBusError>) -> String? {
        if case .failure(let error) = result { return error.name }
        return nil
    }

    /// The application path of the characteristic with a 16-bit UUID, from the registered tree.
    func characteristicPath(_ uuid16: UInt16) -> String? {
        let uuid = SimulatedCharacteristic.uuid128(uuid16)
        return self.bluetoothd.applicationTree.first { _, interfaces in
            interfaces["org.bluez.GattCharacteristic1"]?["UUID"]?.string == uuid
        }?.key
    }

    /// bluetoothd's options for calls on behalf of a connected central.
    func options(mtu: UInt16? = nil) -> DBusValue {
        var pairs: [(String, DBusValue)] = [
            ("device", .objectPath(self.bluetoothd.devicePath(PeripheralHarness.central))),
            ("link", .string("LE")),
        ]
        if let mtu { pairs.append(("mtu", .uint16(mtu))) }
        return .properties(pairs)
    }

    /// Writes the start command to 3E71 as bluetoothd would for the central.
    func writeStart() -> Result<[DBusValue], DBusError> {
        let now = UInt32(Date().timeIntervalSince1970)
        let bytes: [UInt8] = [0x01, UInt8(now & 0xFF), UInt8((now >> 8) & 0xFF), UInt8((now >> 16) & 0xFF),
                              UInt8(now >> 24)]
        return self.call(self.characteristicPath(0x3E71) ?? "/", "org.bluez.GattCharacteristic1", "WriteValue",
                         [.bytes(bytes), self.options(mtu: 23)])
    }

    /// The serial the peripheral files its truth under: the adapter address's last three bytes.
    var serial: String {
        self.bluetoothd.address.split(separator: ":").suffix(3).joined().lowercased()
    }

    /// Rows of a truth CSV (header dropped), split at commas.
    func truthRows(_ file: String) -> [[String]] {
        if let peripheral = self.peripheral {
            for truth in peripheral.truths.values { truth.flush() }
        }
        guard let text = try? String(contentsOfFile: self.truthDirectory + "/" + self.serial + "/" + file,
                                     encoding: .utf8) else { return [] }
        return text.split(separator: "\n").dropFirst().map { $0.split(separator: ",").map(String.init) }
    }
}

extension PeripheralHarness {
    /// Starts `empalink-sim` with `arguments`, its stderr going to `stderrPath`; returns its PID.
    func spawnSimulator(_ arguments: [String], stderrPath: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        let all = [productsDirectory + "/empalink-sim"] + arguments
        var argv: [UnsafeMutablePointer<CChar>?] = all.map { strdup($0) }
        argv.append(nil)
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, all[0], &actions, &attributes, &argv, environ)
        guard result == 0 else { throw DBusError(name: "test.SpawnFailed", message: "\(all[0]): \(result)") }
        return pid
    }

    /// Runs the loop (so the stand-in answers) until the child exits; its exit code, or `nil` if it had to be
    /// killed after `limit` seconds.
    func runUntilExit(_ pid: pid_t, limit: Double = 20) -> Int32? {
        var status: CInt = 0
        var exited = false
        self.wait(limit: limit) {
            exited = waitpid(pid, &status, WNOHANG) == pid
            return exited
        }
        guard exited else {
            terminate(pid)
            return nil
        }
        return (status & 0x7F) == 0 ? (status >> 8) & 0xFF : nil
    }
}
