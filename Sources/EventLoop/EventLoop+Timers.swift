#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Posix

extension EventLoop {
    /// Calls `handler` on the loop thread once `delay` has passed, and then every `interval` if given.
    ///
    /// Timers run on `CLOCK_MONOTONIC` and never fire early. Timers due at the same time fire in the order they
    /// were scheduled. A repeating timer keeps its phase; periods missed while the loop was busy are skipped
    /// rather than fired in a burst. A timer scheduled from a timer handler fires on a later pass, even with a
    /// zero delay. See ``TimerQueue`` for why all timers share one `timerfd`.
    ///
    /// - Parameters:
    ///   - delay: the time until the first firing; zero or negative fires on the next pass.
    ///   - interval: the period of a repeating timer; `nil` for a one-shot timer.
    ///   - handler: the work; it may cancel its own timer.
    /// - Returns: the handle for ``cancel(_:)``.
    /// - Throws: ``Errno/invalidArgument`` when `interval` is not positive (it would spin the loop).
    @discardableResult
    public func scheduleTimer(
        after delay: Duration,
        repeating interval: Duration? = nil,
        handler: @escaping () -> Void
    ) throws(Errno) -> TimerHandle {
        try self.scheduleTimer(at: MonotonicInstant.now.advanced(by: delay), repeating: interval, handler: handler)
    }

    /// Calls `handler` on the loop thread at `deadline`, and then every `interval` if given.
    ///
    /// - Throws: ``Errno/invalidArgument`` when `interval` is not positive.
    @discardableResult
    public func scheduleTimer(
        at deadline: MonotonicInstant,
        repeating interval: Duration? = nil,
        handler: @escaping () -> Void
    ) throws(Errno) -> TimerHandle {
        self.assertInEventLoop()
        guard !self.isClosed else { throw Errno.badFileDescriptor }
        var period: UInt64 = 0
        if let interval {
            let nanoseconds = interval.saturatingNanoseconds
            guard nanoseconds > 0 else { throw Errno.invalidArgument }
            period = UInt64(nanoseconds)
        }
        // 0 means "disarmed" to timerfd; no real monotonic reading is that small.
        let id = self.timers.schedule(deadline: max(deadline.nanoseconds, 1), interval: period, handler: handler)
        self.rearmTimer()
        return TimerHandle(id: id)
    }

    /// Cancels a timer: its handler will not run again, even if it is due in the current batch.
    ///
    /// - Returns: whether the timer was pending (false after a one-shot timer fired or a second cancel).
    @discardableResult
    public func cancel(_ timer: TimerHandle) -> Bool {
        self.assertInEventLoop()
        guard self.timers.cancel(id: timer.id) else { return false }
        self.rearmTimer()
        return true
    }

    /// The number of pending timers (for tests and metrics).
    public var timerCount: Int {
        self.assertInEventLoop()
        return self.timers.count
    }

    /// Runs every timer due now, then re-arms the timerfd for the next deadline.
    func fireDueTimers() {
        var expirations: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &expirations) { raw in
            retryingOnInterrupt { Glibc.read(self.timerFD.rawValue, raw.baseAddress, 8) }
        }
        self.armedDeadline = 0  // a one-shot timerfd that fired is disarmed
        let now = clinux_monotonic_nanoseconds()
        let sequenceLimit = self.timers.nextSequence
        self.isFiringTimers = true
        while let record = self.timers.popDue(now: now, sequenceLimit: sequenceLimit) {
            record.handler()
        }
        self.isFiringTimers = false
        self.rearmTimer()
    }

    /// Arms the timerfd for the earliest live deadline, or disarms it when there is none; one syscall at most,
    /// none when the deadline is unchanged.
    func rearmTimer() {
        guard !self.isFiringTimers, !self.isClosed else { return }
        let wanted = self.timers.earliestDeadline() ?? 0
        guard wanted != self.armedDeadline else { return }
        // Fails only with EBADF/EINVAL on our own descriptor and values: programming errors.
        let result = clinux_timerfd_arm_absolute(self.timerFD.rawValue, wanted)
        assert(result == 0, "timerfd_settime failed: \(Errno.current)")
        self.armedDeadline = wanted
    }
}
