#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Posix

extension EventLoop {
    /// Blocks `signals` in the calling thread, so that they stay pending for a `signalfd` instead of running
    /// their default action (for SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2: terminating the process).
    ///
    /// Call it in `main` before any thread starts (including the loop's thread, libdbus' or the spool
    /// writer's): new threads inherit the mask, and a process-directed signal (`kill`, `systemctl reload`) is
    /// delivered to any one thread that does not block it. A thread created earlier that leaves the signal
    /// unblocked would still die of it.
    ///
    /// - Throws: ``Errno/invalidArgument`` for an invalid signal number.
    public static func blockSignals(_ signals: [CInt]) throws(Errno) {
        try self.changeSignalMask(SIG_BLOCK, signals)
    }

    /// Unblocks `signals` in the calling thread, undoing ``blockSignals(_:)`` (for tests).
    ///
    /// - Throws: ``Errno/invalidArgument`` for an invalid signal number.
    public static func unblockSignals(_ signals: [CInt]) throws(Errno) {
        try self.changeSignalMask(SIG_UNBLOCK, signals)
    }

    private static func changeSignalMask(_ how: CInt, _ signals: [CInt]) throws(Errno) {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals where sigaddset(&set, signal) != 0 {
            throw Errno.invalidArgument
        }
        let result = pthread_sigmask(how, &set, nil)
        if result != 0 { throw Errno(rawValue: result) }
    }

    /// Calls `handler` on the loop thread with the signal number whenever `signo` arrives; replaces an earlier
    /// handler for the same signal.
    ///
    /// Delivery goes through a `signalfd`, so the handler is ordinary code on the loop thread, not an
    /// async-signal context. Signals do not queue: two SIGHUPs in quick succession may arrive as one.
    ///
    /// - Throws: ``Errno/invalidArgument`` when `signo` is invalid or not blocked in the calling thread (see
    ///   ``blockSignals(_:)``): unblocked, it would never reach the loop; ``Errno`` when the `signalfd` cannot
    ///   be created.
    public func onSignal(_ signo: CInt, handler: @escaping (CInt) -> Void) throws(Errno) {
        self.assertInEventLoop()
        guard !self.isClosed else { throw Errno.badFileDescriptor }
        var blocked = sigset_t()
        guard pthread_sigmask(SIG_BLOCK, nil, &blocked) == 0, sigismember(&blocked, signo) == 1 else {
            throw Errno.invalidArgument
        }
        var mask = self.signalMask
        guard sigaddset(&mask, signo) == 0 else { throw Errno.invalidArgument }
        if let existing = self.signalFD {
            if signalfd(existing.rawValue, &mask, 0) < 0 { throw Errno.current }
        } else {
            let fd = signalfd(-1, &mask, CInt(SFD_NONBLOCK | SFD_CLOEXEC))
            guard fd >= 0 else { throw Errno.current }
            if clinux_epoll_ctl(self.epoll.rawValue, EPOLL_CTL_ADD, fd, CLINUX_EPOLLIN, EventLoop.signalToken) != 0 {
                let error = Errno.current
                _ = Glibc.close(fd)
                throw error
            }
            self.signalFD = FileDescriptor(rawValue: fd)
        }
        self.signalMask = mask
        self.signalHandlers[signo] = handler
    }

    /// Stops delivering `signo` to the loop. The signal stays blocked; an arriving one stays pending.
    public func removeSignalHandler(_ signo: CInt) {
        self.assertInEventLoop()
        guard self.signalHandlers.removeValue(forKey: signo) != nil, let fd = self.signalFD else { return }
        sigdelset(&self.signalMask, signo)
        _ = signalfd(fd.rawValue, &self.signalMask, 0)
    }

    /// Reads every pending signal from the signalfd and runs its handler.
    func deliverSignals() {
        guard let fd = self.signalFD else { return }
        let size = clinux_signalfd_siginfo_size()
        let buffer = UnsafeMutableRawBufferPointer(start: self.signalBuffer, count: size * EventLoop.signalBufferCount)
        while true {
            let count: Int
            do throws(Errno) {
                count = try fd.read(into: buffer)
            } catch {
                return  // EAGAIN: all read
            }
            guard count >= size else { return }
            var offset = 0
            while offset + size <= count {
                let signo = clinux_signalfd_siginfo_signo(self.signalBuffer + offset)
                self.signalHandlers[signo]?(signo)
                offset += size
            }
        }
    }
}
