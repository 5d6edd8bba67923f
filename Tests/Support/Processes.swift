#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// Every process ``spawn(_:environment:output:)`` started and nobody has reaped yet. A test that leaks its harness
/// (a retain cycle keeps a ``TestBus`` alive, a thrown error skips a `stop()`) would otherwise leave its
/// dbus-daemon, simulator or broker running after the test process exits, reparented to init; the exit handler
/// ends those, by PID.
private let unreaped = Mutex<Set<pid_t>>([])
private let exitSweepInstalled = Mutex(false)

private func installExitSweep() {
    let first = exitSweepInstalled.withLock { installed in
        defer { installed = true }
        return !installed
    }
    guard first else { return }
    atexit {
        let pids = unreaped.withLock { pids in
            defer { pids.removeAll() }
            return pids
        }
        var status: CInt = 0
        // Only our own children that still run: waitpid answers 0 for those, and -1 (ECHILD) for a PID reaped
        // elsewhere and perhaps reused since, which is left alone.
        let running = pids.filter { waitpid($0, &status, WNOHANG) == 0 }
        for pid in running { kill(pid, SIGTERM) }
        for pid in running {
            var reaped = false
            for _ in 0..<100 where !reaped {
                reaped = waitpid(pid, &status, WNOHANG) == pid
                if !reaped { usleep(10_000) }
            }
            if !reaped {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
            }
        }
    }
}

/// Records that `pid`, which ``spawn(_:environment:output:)`` started, has been reaped.
public func reaped(_ pid: pid_t) {
    _ = unreaped.withLock { $0.remove(pid) }
}

/// A failure of the test harness itself (a tool that would not start or finished badly).
public struct HarnessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Starts a program; returns its PID.
///
/// - Parameters:
///   - environment: The child's whole environment; `nil` inherits ours.
///   - output: A file that stdout and stderr are appended to; `nil` sends both to /dev/null.
public func spawn(_ arguments: [String], environment: [String]? = nil, output: String? = nil) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, output ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
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
    var envp: [UnsafeMutablePointer<CChar>?] = environment.map { $0.map { strdup($0) } } ?? []
    envp.append(nil)
    defer { for pointer in envp { free(pointer) } }
    let result = environment == nil
        ? posix_spawn(&pid, arguments[0], &actions, &attributes, &argv, environ)
        : posix_spawn(&pid, arguments[0], &actions, &attributes, &argv, &envp)
    guard result == 0 else { throw HarnessError("cannot start \(arguments[0]): \(String(cString: strerror(result)))") }
    installExitSweep()
    _ = unreaped.withLock { $0.insert(pid) }
    return pid
}

/// Runs a program to completion; throws unless it exits 0, with what it printed.
public func runToCompletion(_ arguments: [String], output: String = "/dev/null") throws {
    let pid = try spawn(arguments, output: output)
    var status: CInt = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    reaped(pid)
    guard status == 0 else {
        let log = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        throw HarnessError("\(arguments.joined(separator: " ")) failed (status \(status)): \(log)")
    }
}

/// Ends a process we started, by PID: SIGTERM, then SIGKILL after 3 s; reaps it.
public func terminate(_ pid: pid_t) {
    defer { reaped(pid) }
    kill(pid, SIGTERM)
    var status: CInt = 0
    for _ in 0..<300 {
        if waitpid(pid, &status, WNOHANG) == pid { return }
        usleep(10_000)
    }
    kill(pid, SIGKILL)
    _ = waitpid(pid, &status, 0)
}

