#if canImport(Glibc)
import Glibc
#endif
import DBus
import Foundation
import Testing
import TestSupport

@testable import Simulator

/// `empalink-sim --peripheral` as the operator meets it: its command line, and the built binary failing in one
/// line with exit 1 (never hanging) when bluetoothd refuses it or the adapter does not come.
@Suite(.serialized) struct PeripheralCommandTests {
    @Test(arguments: [
        (["--adapter", "hci0", "--bus", "unix:path=/x", "--devices", "1"], "--adapter needs --peripheral"),
        (["--adapter-timeout", "3", "--bus", "unix:path=/x", "--devices", "1"], "--adapter-timeout needs --peripheral"),
        (["--peripheral"], "--peripheral needs --adapter hciN"),
        (["--peripheral", "--adapter", "hci0", "--devices", "2"], "--peripheral serves exactly one device"),
        (["--peripheral", "--adapter", "eth0"], "--adapter needs an adapter name"),
        (["--peripheral", "--adapter", "hci0", "--session"], "--peripheral talks to bluetoothd"),
        (["--peripheral", "--adapter", "hci0", "--adapter-timeout", "0"], "--adapter-timeout needs a number"),
    ])
    func rejectsInconsistentOptions(arguments: [String], message: String) {
        guard case .failure(let error) = SimulatorCommand.parse(arguments) else {
            Issue.record("\(arguments) parsed")
            return
        }
        #expect(error.message.hasPrefix(message), "\(error.message)")
    }

    @Test func peripheralOptionsDefaultToTheSystemBusAndOneWristband() throws {
        let options = try SimulatorCommand.parse(["--peripheral", "--adapter", "hci1", "--seed", "4",
                                                  "--adapter-timeout=2.5"]).get()
        #expect(options.peripheral)
        #expect(options.adapter == "hci1")
        #expect(options.bus == .system)
        #expect(options.devices == 1)
        #expect(options.seed == 4)
        #expect(options.adapterTimeout == 2.5)
        let explicit = try SimulatorCommand.parse(["--peripheral", "--adapter", "hci0", "--bus", "unix:path=/b",
                                                   "--devices", "1"]).get()
        #expect(explicit.bus == .address("unix:path=/b"))
        // The central face is unchanged.
        let central = try SimulatorCommand.parse(["--bus", "unix:path=/b", "--devices", "3"]).get()
        #expect(!central.peripheral && central.adapter == nil && central.devices == 3)
    }

    /// Runs the built binary against the stand-in; its exit code and stderr lines.
    func runBinary(_ h: PeripheralHarness, _ arguments: [String]) throws -> (Int32?, [String]) {
        let stderrPath = h.bus.directory + "/stderr"
        let pid = try h.spawnSimulator(["--bus", h.bus.address, "--log-level", "warn"] + arguments,
                                       stderrPath: stderrPath)
        let code = h.runUntilExit(pid)
        let text = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
        return (code, text.split(separator: "\n").map(String.init))
    }

    @Test func aRefusedRegistrationExitsOneWithOneLine() throws {
        let h = try PeripheralHarness()
        defer { h.close() }
        h.bluetoothd.applicationError = DBusError(name: "org.bluez.Error.Failed",
                                                  message: "No valid service object found")
        try h.bluetoothd.start()
        let (code, lines) = try self.runBinary(h, ["--peripheral", "--adapter", "hci0"])
        #expect(code == 1)
        #expect(lines.count == 1, "\(lines)")
        #expect(lines.first?.hasPrefix("empalink-sim: RegisterApplication on /org/bluez/hci0 failed: "
                                       + "org.bluez.Error.Failed: No valid service object found") == true,
                "\(lines)")
        #expect(h.bluetoothd.applicationRegistrations == 1)
    }

    @Test func aRefusedAdvertisementExitsOneWithOneLine() throws {
        let h = try PeripheralHarness()
        defer { h.close() }
        h.bluetoothd.advertisementError = DBusError(name: "org.bluez.Error.NotPermitted",
                                                    message: "Maximum advertisements reached")
        try h.bluetoothd.start()
        let (code, lines) = try self.runBinary(h, ["--peripheral", "--adapter", "hci0"])
        #expect(code == 1)
        #expect(lines.count == 1, "\(lines)")
        #expect(lines.first?.contains("RegisterAdvertisement") == true)
        #expect(lines.first?.contains("Maximum advertisements reached") == true)
    }

    @Test func anAbsentAdapterExitsOneAfterItsTimeout() throws {
        let h = try PeripheralHarness()
        defer { h.close() }
        try h.bluetoothd.start()
        let (code, lines) = try self.runBinary(h, ["--peripheral", "--adapter", "hci1", "--adapter-timeout", "0.5"])
        #expect(code == 1)
        #expect(lines == ["empalink-sim: adapter hci1 did not appear within 0.5 s (--adapter-timeout); check "
                          + "`btmgmt info` or the adapter name"])
        #expect(h.bluetoothd.applicationRegistrations == 0)
    }

    @Test func noBluetoothdExitsOneAfterItsTimeout() throws {
        let h = try PeripheralHarness()
        defer { h.close() }
        let (code, lines) = try self.runBinary(h, ["--peripheral", "--adapter", "hci0", "--adapter-timeout", "0.3"])
        #expect(code == 1)
        #expect(lines.count == 1, "\(lines)")
        #expect(lines.first?.contains("bluetoothd (org.bluez) did not appear") == true)
    }

    @Test func sigtermAfterRegistrationExitsZeroWithTheTruthOnDisk() throws {
        let h = try PeripheralHarness()
        defer { h.close() }
        try h.bluetoothd.start()
        let stderrPath = h.bus.directory + "/stderr"
        let pid = try h.spawnSimulator(["--bus", h.bus.address, "--log-level", "warn", "--peripheral", "--adapter",
                                        "hci0", "--truth", h.truthDirectory], stderrPath: stderrPath)
        #expect(h.wait { h.bluetoothd.advertisementRegistrations == 1 && !h.bluetoothd.advertisement.isEmpty })
        kill(pid, SIGTERM)
        #expect(h.runUntilExit(pid) == 0)
        #expect(FileManager.default.fileExists(atPath: h.truthDirectory + "/" + h.serial + "/sessions.csv"))
        #expect(((try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "x").isEmpty)
    }
}
