import CSystemd
import EventLoop

/// `sd_notify` for `Type=notify` units: READY, STATUS, WATCHDOG, STOPPING. Without `NOTIFY_SOCKET` every call
/// is a cheap no-op, so the agent behaves the same outside systemd.
final class SystemdNotifier {
    /// The watchdog period systemd asked for (`WATCHDOG_USEC`), if any.
    let watchdogInterval: Duration?
    var watchdogTimer: TimerHandle?

    init() {
        var usec: UInt64 = 0
        if sd_watchdog_enabled(0, &usec) > 0, usec > 0 {
            self.watchdogInterval = .microseconds(Int64(clamping: usec))
        } else {
            self.watchdogInterval = nil
        }
    }

    func notify(_ state: String) {
        _ = sd_notify(0, state)
    }

    func ready(status: String) { self.notify("READY=1\nSTATUS=\(status)") }
    func status(_ text: String) { self.notify("STATUS=\(text)") }
    func stopping() { self.notify("STOPPING=1\nSTATUS=stopping") }

    /// Pings the watchdog from the loop at half the period, so a stuck loop is restarted by systemd.
    func startWatchdog(on loop: EventLoop) {
        guard let interval = self.watchdogInterval else { return }
        let half = interval / 2
        self.notify("WATCHDOG=1")
        self.watchdogTimer = try? loop.scheduleTimer(after: half, repeating: half) { [weak self] in
            self?.notify("WATCHDOG=1")
        }
    }
}
