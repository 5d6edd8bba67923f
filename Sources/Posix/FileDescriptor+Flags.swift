#if canImport(Glibc)
import Glibc
#endif
import CLinux

extension FileDescriptor {
    /// Whether `read`/`write` return `EAGAIN` instead of blocking (`O_NONBLOCK`).
    ///
    /// Every descriptor registered with an event loop must be non-blocking: readiness is a hint, and a blocking
    /// read after a spurious wake-up would stall every other device on the loop.
    ///
    /// - Throws: ``Errno`` from `fcntl(2)`.
    public func isNonBlocking() throws(Errno) -> Bool {
        let flags = try self.fcntlGet(F_GETFL)
        return flags & O_NONBLOCK != 0
    }

    /// Sets or clears `O_NONBLOCK`.
    ///
    /// - Throws: ``Errno`` from `fcntl(2)`.
    public func setNonBlocking(_ enabled: Bool = true) throws(Errno) {
        let flags = try self.fcntlGet(F_GETFL)
        let wanted = enabled ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        if wanted != flags { try self.fcntlSet(F_SETFL, wanted) }
    }

    /// Whether the descriptor is closed across `exec` (`FD_CLOEXEC`).
    ///
    /// - Throws: ``Errno`` from `fcntl(2)`.
    public func isCloseOnExec() throws(Errno) -> Bool {
        let flags = try self.fcntlGet(F_GETFD)
        return flags & FD_CLOEXEC != 0
    }

    /// Sets or clears `FD_CLOEXEC`, so that helper processes do not inherit sockets and files by accident.
    ///
    /// - Throws: ``Errno`` from `fcntl(2)`.
    public func setCloseOnExec(_ enabled: Bool = true) throws(Errno) {
        let flags = try self.fcntlGet(F_GETFD)
        let wanted = enabled ? flags | FD_CLOEXEC : flags & ~FD_CLOEXEC
        if wanted != flags { try self.fcntlSet(F_SETFD, wanted) }
    }

    private func fcntlGet(_ command: CInt) throws(Errno) -> CInt {
        switch retryingOnInterrupt({ clinux_fcntl_get(self.rawValue, command) }) {
        case .success(let value): return value
        case .failure(let error): throw error
        }
    }

    private func fcntlSet(_ command: CInt, _ value: CInt) throws(Errno) {
        switch retryingOnInterrupt({ clinux_fcntl_int(self.rawValue, command, value) }) {
        case .success: return
        case .failure(let error): throw error
        }
    }
}
