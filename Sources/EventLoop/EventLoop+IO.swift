#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Posix

extension EventLoop {
    /// Calls `handler` on the loop thread whenever `fd` is ready for `interest` (level-triggered).
    ///
    /// The descriptor should be non-blocking (``Posix/FileDescriptor/setNonBlocking(_:)``). ``IOEvents/hangup``
    /// and ``IOEvents/error`` are reported whatever the interest; a handler that sees them must deregister or
    /// it is called again at once. One descriptor has at most one registration; to watch both directions,
    /// register once with `[.readable, .writable]` and narrow it with ``reregister(_:interest:)``.
    ///
    /// - Parameters:
    ///   - fd: the descriptor; the loop never closes it.
    ///   - interest: the readiness to report.
    ///   - handler: called with the ready events.
    /// - Returns: the registration, for ``reregister(_:interest:)`` and ``deregister(_:)``.
    /// - Throws: ``Errno``: `EEXIST` when `fd` is already registered, `EPERM` when it cannot be polled (a regular
    ///   file), `ENOMEM`/`ENOSPC` at the kernel's watch limit.
    public func register(
        _ fd: FileDescriptor,
        interest: IOEvents,
        handler: @escaping (IOEvents) -> Void
    ) throws(Errno) -> IORegistration {
        self.assertInEventLoop()
        guard !self.isClosed else { throw Errno.badFileDescriptor }
        let token = self.nextToken
        if clinux_epoll_ctl(self.epoll.rawValue, EPOLL_CTL_ADD, fd.rawValue, interest.epollInterest, token) != 0 {
            throw Errno.current
        }
        self.nextToken += 1
        if let stale = self.tokenByDescriptor[fd.rawValue] {
            // The kernel accepted the descriptor number, so the old registration's descriptor was closed without
            // deregistering: epoll has forgotten it, and so do we.
            self.registrations.removeValue(forKey: stale)
        }
        self.tokenByDescriptor[fd.rawValue] = token
        self.registrations[token] = IOHandlerEntry(fileDescriptor: fd, interest: interest, handler: handler)
        return IORegistration(fileDescriptor: fd, token: token)
    }

    /// Changes the readiness a registration reports, e.g. adds ``IOEvents/writable`` while output is queued.
    ///
    /// - Throws: ``Errno``: `ENOENT` when the registration was already removed.
    public func reregister(_ registration: IORegistration, interest: IOEvents) throws(Errno) {
        self.assertInEventLoop()
        guard let entry = self.registrations[registration.token] else { throw Errno.noEntry }
        if entry.interest == interest { return }
        let result = clinux_epoll_ctl(
            self.epoll.rawValue, EPOLL_CTL_MOD, registration.fileDescriptor.rawValue, interest.epollInterest,
            registration.token
        )
        if result != 0 { throw Errno.current }
        entry.interest = interest
    }

    /// Stops reporting a registration's readiness. Safe inside any handler, including its own; events already
    /// collected for it in the current batch are dropped. Deregistering twice, or after closing the descriptor,
    /// does nothing harmful.
    ///
    /// Deregister before closing the descriptor: epoll forgets a closed descriptor only when no duplicate of it
    /// (`dup`, `fork`) remains open.
    public func deregister(_ registration: IORegistration) {
        self.assertInEventLoop()
        guard self.registrations.removeValue(forKey: registration.token) != nil else { return }
        let fd = registration.fileDescriptor.rawValue
        guard self.tokenByDescriptor[fd] == registration.token else { return }
        self.tokenByDescriptor.removeValue(forKey: fd)
        // ENOENT/EBADF: the descriptor was closed first and epoll already dropped it.
        _ = clinux_epoll_ctl(self.epoll.rawValue, EPOLL_CTL_DEL, fd, 0, 0)
    }

    /// The number of live registrations (for tests and metrics).
    public var registrationCount: Int {
        self.assertInEventLoop()
        return self.registrations.count
    }
}
