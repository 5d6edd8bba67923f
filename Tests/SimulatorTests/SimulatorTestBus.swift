#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

import DBus
import EventLoop

/// A private `dbus-daemon` started for one test and ended (by PID) when the test is done.
final class SimulatorTestBus {
    let pid: pid_t
    var running = true
    let directory: String
    let address: String

    init() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("empalink-sim-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let socket = directory + "/bus"
        // A session-type bus: anyone may own any name, which is what the simulator needs to own org.bluez.
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(socket)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
        try config.write(toFile: directory + "/bus.conf", atomically: true, encoding: .utf8)
        self.pid = try spawn(["/usr/bin/dbus-daemon", "--config-file=\(directory)/bus.conf", "--nofork",
                              "--nopidfile"])
        self.directory = directory
        self.address = "unix:path=\(socket)"
        // Wait for the socket (bounded): the daemon creates it before it accepts connections.
        for _ in 0..<500 {
            if access(socket, F_OK) == 0 { return }
            usleep(10_000)
        }
        self.stop()
        throw DBusError(name: "test.BusDidNotStart", message: "dbus-daemon did not create \(socket)")
    }

    /// Ends the daemon we started (by PID) and reaps it.
    func stop() {
        guard self.running else { return }
        self.running = false
        kill(self.pid, SIGTERM)
        var status: CInt = 0
        for _ in 0..<300 {
            if waitpid(self.pid, &status, WNOHANG) == self.pid { return }
            usleep(10_000)
        }
        kill(self.pid, SIGKILL)
        _ = waitpid(self.pid, &status, 0)
    }

    deinit {
        self.stop()
        try? FileManager.default.removeItem(atPath: self.directory)
    }
}

/// Starts a program with stdout and stderr sent to /dev/null; returns its PID.
func spawn(_ arguments: [String]) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
    argv.append(nil)
    defer { for pointer in argv { free(pointer) } }
    // The test runner's worker threads block most signals and a spawned child inherits the mask: give it a
    // clean one, or SIGTERM would never reach it.
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigmask(&attributes, &empty)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
    var pid: pid_t = 0
    let result = posix_spawn(&pid, arguments[0], &actions, &attributes, &argv, environ)
    guard result == 0 else { throw DBusError(name: "test.SpawnFailed", message: "\(arguments[0]): \(result)") }
    return pid
}
