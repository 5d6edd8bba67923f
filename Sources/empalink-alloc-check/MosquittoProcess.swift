#if canImport(Glibc)
import Glibc
#endif

/// A private `mosquitto` on a free loopback port, for the MQTT case. Plain Glibc: the check keeps Foundation
/// out of the process it measures.
final class MosquittoProcess {
    let port: Int
    let directory: String
    private var pid: pid_t

    /// Starts `/usr/sbin/mosquitto` and waits until it accepts connections.
    /// - Throws: ``CheckError`` when it cannot start or does not listen within 5 s.
    init(executable: String = "/usr/sbin/mosquitto") throws(CheckError) {
        var template = Array("/tmp/empalink-alloc-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw CheckError("mkdtemp failed: errno \(errno)") }
        self.directory = String(cString: made)
        self.port = try Self.freePort()
        let config = self.directory + "/mosquitto.conf"
        let text = "listener \(self.port) 127.0.0.1\nallow_anonymous true\npersistence false\nuser root\n"
            + "log_dest file \(self.directory)/mosquitto.log\n"
        guard let file = fopen(config, "w") else { throw CheckError("cannot write \(config)") }
        fputs(text, file)
        fclose(file)

        var pid: pid_t = 0
        let arguments = [executable, "-c", config]
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        // A test runner may have signals blocked (an event loop's signalfd); the broker must still die on SIGTERM.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let status = posix_spawn(&pid, executable, nil, &attributes, argv, environ)
        guard status == 0 else { throw CheckError("cannot start \(executable): errno \(status)") }
        self.pid = pid
        for _ in 0..<500 {
            if Self.accepts(port: self.port) { return }
            var exit: CInt = 0
            if waitpid(pid, &exit, WNOHANG) == pid {
                self.pid = 0
                throw CheckError("mosquitto exited at start (see \(self.directory)/mosquitto.log)")
            }
            usleep(10_000)
        }
        self.stop()
        throw CheckError("mosquitto did not listen on port \(self.port)")
    }

    deinit {
        self.stop()
        unlink(self.directory + "/mosquitto.conf")
        unlink(self.directory + "/mosquitto.log")
        rmdir(self.directory)
    }

    /// SIGTERM, then SIGKILL if it has not exited within 2 s; always reaped.
    func stop() {
        guard self.pid > 0 else { return }
        kill(self.pid, SIGTERM)
        var status: CInt = 0
        for _ in 0..<200 {
            if waitpid(self.pid, &status, WNOHANG) == self.pid {
                self.pid = 0
                return
            }
            usleep(10_000)
        }
        kill(self.pid, SIGKILL)
        _ = waitpid(self.pid, &status, 0)
        self.pid = 0
    }

    static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        return address
    }

    /// A port the kernel just handed out; the tiny race with other processes is acceptable for a check tool.
    static func freePort() throws(CheckError) -> Int {
        let fd = socket(AF_INET, CInt(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw CheckError("socket failed: errno \(errno)") }
        defer { close(fd) }
        var address = Self.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
            }
        }
        guard bound else { throw CheckError("cannot bind a loopback port: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, CInt(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = Self.loopback(port: port)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                connect(fd, raw, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
