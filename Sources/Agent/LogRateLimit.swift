import EventLoop

/// A budget of log lines per time window, so that a flood (thousands of rejected commands a second from a
/// misbehaving client) cannot fill the journal while the first events of a kind still reach it.
///
/// Each window lets `burst` events through; the first event after a window with suppressed ones says how many
/// were left out. Counting is cheap; only events that pass build their message.
struct LogRateLimit {
    /// Lines allowed per window.
    let burst: Int
    let window: Duration
    private var windowStart = MonotonicInstant.now
    private var passed = 0
    private var suppressed = 0

    init(burst: Int, window: Duration) {
        self.burst = burst
        self.window = window
    }

    /// Accounts for one event at `now`.
    ///
    /// - Returns: `nil` when the event must not be logged; otherwise how many events were suppressed since the
    ///   last one logged (0 when none were).
    mutating func admit(now: MonotonicInstant = .now) -> Int? {
        if now < self.windowStart || self.windowStart.duration(to: now) >= self.window {
            self.windowStart = now
            self.passed = 0
        }
        guard self.passed < self.burst else {
            self.suppressed += 1
            return nil
        }
        self.passed += 1
        let skipped = self.suppressed
        self.suppressed = 0
        return skipped
    }
}
