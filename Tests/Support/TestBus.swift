#if canImport(Glibc)
import Glibc
#endif
import Foundation

import DBus
import EventLoop

/// A private `dbus-daemon` started for one test and ended (by PID) when the test is done.
public final class TestBus {
    public let pid: pid_t
    var running = true
    public let directory: String
    public let address: String

    public init() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("empalink-dbus-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
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
        // Wait (bounded) until the daemon accepts connections: the socket file appears before it listens.
        for _ in 0..<500 {
            if access(socket, F_OK) == 0, TestBus.accepts(socket) { return }
            usleep(10_000)
        }
        self.stop()
        throw DBusError(name: "test.BusDidNotStart", message: "dbus-daemon did not create \(socket)")
    }

    /// Whether a Unix stream socket at `path` accepts a connection.
    static func accepts(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }

    /// Ends the daemon we started (by PID) and reaps it.
    public func stop() {
        guard self.running else { return }
        self.running = false
        defer { reaped(self.pid) }
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

extension EventLoop {
    /// Runs the loop on the calling thread until `stop()`, with a guard timer so a broken test fails instead of
    /// hanging (a safety net, not a timing assertion).
    public func runForTest(limit: Duration = .seconds(20)) throws {
        var timedOut = false
        let guardTimer = try self.scheduleTimer(after: limit) {
            timedOut = true
            self.stop()
        }
        self.run()
        self.cancel(guardTimer)
        if timedOut { throw LoopTimeout(limit: limit) }
    }
}

extension EventLoop {
    /// Runs the loop on the calling thread for `seconds`.
    public func run(forSeconds seconds: Double) {
        _ = try? self.scheduleTimer(after: .milliseconds(Int64(seconds * 1000))) { [self] in self.stop() }
        self.run()
    }

    /// Runs the loop until `condition` holds, checking every 20 ms, at most `limit` seconds.
    ///
    /// - Returns: whether `condition` held in time.
    public func run(until condition: () -> Bool, limit: Double = 10) -> Bool {
        var waited = 0.0
        while !condition() {
            if waited >= limit { return false }
            self.run(forSeconds: 0.02)
            waited += 0.02
        }
        return true
    }
}

/// A test loop that was not stopped in time: thrown so the test fails instead of hanging.
public struct LoopTimeout: Error, CustomStringConvertible {
    public var limit: Duration
    public var description: String { "the loop was not stopped within \(self.limit)" }
}

/// Calls `body` on each completion and stops the loop after `count` of them.
public final class Countdown {
    public var remaining: Int
    let loop: EventLoop

    public init(_ count: Int, loop: EventLoop) {
        self.remaining = count
        self.loop = loop
    }

    public func tick() {
        self.remaining -= 1
        if self.remaining == 0 { self.loop.stop() }
    }
}

/// The directory of the package's built products (where `empalink-sim` is), found from the test binary's path.
public var productsDirectory: String {
    var path = CommandLine.arguments[0]
    if let range = path.range(of: ".xctest", options: .backwards) {
        path = String(path[..<range.lowerBound])
    }
    return String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
}

/// `empalink-sim` serving `devices` wristbands on `bus`, ended by PID on `stop()` or deinit.
public final class SimProcess {
    public let pid: pid_t
    public let truth: String
    var running = true

    public init(bus: TestBus, devices: Int, seed: Int = 1, scenario: String? = nil) throws {
        self.truth = bus.directory + "/truth"
        var arguments = [productsDirectory + "/empalink-sim", "--bus", bus.address, "--devices", String(devices),
                         "--seed", String(seed), "--truth", self.truth, "--log-level", "warn"]
        if let scenario { arguments += ["--scenario", scenario] }
        self.pid = try spawn(arguments)
    }

    public func stop() {
        guard self.running else { return }
        self.running = false
        terminate(self.pid)
    }

    deinit { self.stop() }
}
