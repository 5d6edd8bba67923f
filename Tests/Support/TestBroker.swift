#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A private `mosquitto` on a free loopback port, ended by PID; it can be stopped and started again on the
/// same port (for reconnect tests).
public final class TestBroker {
    public let port: Int
    public let directory: String
    public let configPath: String
    public private(set) var pid: pid_t?

    /// - Parameter settings: extra lines for the listener (TLS files, password file, limits).
    public init(settings: [String] = [], anonymous: Bool = true) throws {
        self.port = try freeLoopbackPort()
        self.directory = try makeTemporaryDirectory("mosquitto")
        self.configPath = self.directory + "/mosquitto.conf"
        let lines = [
            "per_listener_settings false",
            "persistence false",
            // Running as root, mosquitto would otherwise switch to the `mosquitto` user and lose access to our
            // 0600 key and password files.
            "user root",
            "log_dest file \(self.directory)/mosquitto.log",
            "log_type all",
            "listener \(self.port) 127.0.0.1",
            "allow_anonymous \(anonymous)",
        ] + settings
        try (lines.joined(separator: "\n") + "\n").write(toFile: self.configPath, atomically: true, encoding: .utf8)
        try self.start()
    }

    /// Starts the broker and waits (bounded) until it accepts connections.
    public func start() throws {
        guard self.pid == nil else { return }
        let pid = try spawn(["/usr/sbin/mosquitto", "-c", self.configPath],
                                   output: self.directory + "/stdout.log")
        self.pid = pid
        for _ in 0..<500 {
            if acceptsConnections(port: self.port) { return }
            var status: CInt = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                self.pid = nil
                throw HarnessError("mosquitto exited at start: \(self.log)")
            }
            usleep(10_000)
        }
        self.stop()
        throw HarnessError("mosquitto did not listen on port \(self.port): \(self.log)")
    }

    /// Ends the broker (SIGTERM, by PID) and reaps it.
    public func stop() {
        guard let pid = self.pid else { return }
        self.pid = nil
        terminate(pid)
    }

    /// Sends `signal` to the broker (SIGSTOP to freeze it, SIGKILL to make it vanish); SIGKILL also reaps it.
    public func send(_ signal: CInt) {
        guard let pid = self.pid else { return }
        kill(pid, signal)
        if signal == SIGKILL {
            var status: CInt = 0
            _ = waitpid(pid, &status, 0)
            self.pid = nil
        }
    }

    /// The broker's log, for failure messages.
    public var log: String {
        let files = ["/mosquitto.log", "/stdout.log"]
        return files.compactMap { try? String(contentsOfFile: self.directory + $0, encoding: .utf8) }
            .joined(separator: "\n")
    }

    deinit {
        self.stop()
        try? FileManager.default.removeItem(atPath: self.directory)
    }
}
