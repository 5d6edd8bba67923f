#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A failure of the test harness itself (a tool that would not start or finished badly).
struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Starts a program with a clean signal mask, stdout and stderr appended to `output` (or /dev/null).
///
/// The test runner's worker threads block most signals and a spawned child inherits the mask: without a clean
/// one SIGTERM would never reach the broker.
func spawnProcess(_ arguments: [String], output: String = "/dev/null") throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
    argv.append(nil)
    defer { for pointer in argv { free(pointer) } }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigmask(&attributes, &empty)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
    var pid: pid_t = 0
    let result = posix_spawn(&pid, arguments[0], &actions, &attributes, &argv, environ)
    guard result == 0 else { throw HarnessError("cannot start \(arguments[0]): \(String(cString: strerror(result)))") }
    return pid
}

/// Runs a program to completion; throws unless it exits 0.
func runProcess(_ arguments: [String], output: String = "/dev/null") throws {
    let pid = try spawnProcess(arguments, output: output)
    var status: CInt = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    guard status == 0 else {
        let log = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        throw HarnessError("\(arguments.joined(separator: " ")) failed (status \(status)): \(log)")
    }
}

/// Ends a child we started, by PID: SIGTERM, then SIGKILL after 3 s; reaps it.
func endProcess(_ pid: pid_t) {
    kill(pid, SIGTERM)
    var status: CInt = 0
    for _ in 0..<300 {
        if waitpid(pid, &status, WNOHANG) == pid { return }
        usleep(10_000)
    }
    kill(pid, SIGKILL)
    _ = waitpid(pid, &status, 0)
}

/// A TCP port on 127.0.0.1 that was free a moment ago (the kernel's choice for an ephemeral bind).
func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw HarnessError("socket: \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
            bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
        }
    }
    guard bound else { throw HarnessError("bind: \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
func acceptsConnections(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
            connect(fd, raw, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
}

/// A fresh private directory under the temporary directory.
func makeTemporaryDirectory(_ name: String) throws -> String {
    let path = FileManager.default.temporaryDirectory
        .appendingPathComponent("empalink-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}
