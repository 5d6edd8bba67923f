#if canImport(Glibc)
import Glibc
#endif
import Logging
import Posix
import Spool

extension AgentRuntime {
    /// Takes the instance lock beside the control socket (`agent.control_socket` + `.lock`), so that a second
    /// `empalinkd` on the same configuration refuses to start instead of knocking the first off the broker
    /// (same client id), fighting over the wristbands and replacing its control socket.
    ///
    /// The lock is a `flock(2)` the kernel drops when the process ends, however it ends, so a stale lock file
    /// never blocks a restart. The spool directory has its own lock (``Spool``), for two configurations that share
    /// a `spool.dir`.
    ///
    /// - Returns: the lock, or `nil` when the lock file cannot be created (logged: the control socket beside it
    ///   will fail for the same reason, and the agent still runs).
    /// - Throws: a one-line ``AgentError`` when another process holds the lock.
    static func lockInstance(controlSocket: String, logger: Logger) throws(AgentError) -> FileLock? {
        let path = controlSocket + ".lock"
        if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            _ = mkdir(String(path[..<slash]), 0o755)
        }
        do throws(Errno) {
            return try FileLock(path: path, createFile: true)
        } catch {
            if error == .wouldBlock {
                throw AgentError("another empalinkd is running with this configuration (it holds \(path)); "
                                     + "stop it first, or give this one its own agent.control_socket and spool.dir")
            }
            logger.warn("cannot take the instance lock \(path): \(error); a second empalinkd would not be refused")
            return nil
        }
    }

    /// The spool's open error as the agent treats it: a spool held by another process stops the start (two
    /// agents must not share one spool), anything else leaves the agent running without a spool.
    static func refuseSharedSpool(_ error: SpoolError) throws(AgentError) {
        if error.code == .locked { throw AgentError(error.description) }
    }
}
