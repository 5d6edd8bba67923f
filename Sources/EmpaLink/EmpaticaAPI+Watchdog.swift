import BlueZ
import EventLoop

/// The stuck-discovery watchdog (SPEC §5). Long-running BlueZ centrals get stuck: discovery that reports
/// `Discovering` but finds nothing, `InProgress` forever, connection-abort storms. When a wristband is wanted and
/// discovery has produced no advertisement for ``EmpaticaAPI/Options/watchdogTimeout``, the API escalates:
///
/// 1. restart discovery (StopDiscovery, StartDiscovery);
/// 2. power-cycle the adapter (`Powered` false, then true);
/// 3. report ``BLEStatus/notAvailable`` with the reason, and keep retrying slowly (steps 1–2 again every four
///    periods) until an advertisement arrives, which resets it all.
///
/// Every escalation is reported through ``EmpaticaAPI/onWatchdog`` and counted in ``EmpaticaAPI/watchdogCounts``.
extension EmpaticaAPI {
    /// An escalation step.
    public enum WatchdogAction: String, Sendable, Equatable, CaseIterable {
        case restartDiscovery = "restart_discovery"
        case powerCycle = "power_cycle"
        case giveUp = "not_available"
    }

    func startWatchdog() {
        guard self.options.watchdogTimeout > .zero, self.watchdogTimer == nil else { return }
        self.watchdogTimer = try? self.loop.scheduleTimer(after: .seconds(1), repeating: .seconds(1)) { [weak self] in
            self?.watchdogTick()
        }
    }

    /// An advertisement (a device appeared or its RSSI changed): discovery works.
    func sawAdvertisement() {
        self.silentSeconds = 0
        if self.watchdogLevel > 0 {
            self.watchdogLevel = 0
            self.watchdogReason = nil
            self.updateStatus()
        }
    }

    func watchdogTick() {
        // Only time spent discovering for a reason counts: a quiet background pause or a fleet that is all
        // connected is not a stuck adapter. The tick stops with discovery (no idle wake-ups) and is started
        // again when discovery starts.
        guard self.discoveryStarted, self.discoveryWanted else {
            if !self.discoveryStarted, let timer = self.watchdogTimer {
                self.loop.cancel(timer)
                self.watchdogTimer = nil
            }
            return
        }
        self.silentSeconds += 1
        let period = max(1, Int(self.options.watchdogTimeout.components.seconds))
        guard self.silentSeconds >= period else { return }
        switch self.watchdogLevel {
        case 0: self.escalate(.restartDiscovery, nextLevel: 1)
        case 1: self.escalate(.powerCycle, nextLevel: 2)
        case 2: self.escalate(.giveUp, nextLevel: 3)
        default:
            // Keep retrying slowly: every fourth period, start over from a discovery restart.
            if self.silentSeconds >= period * 4 { self.watchdogLevel = 0 }
            return
        }
        self.silentSeconds = 0
    }

    func escalate(_ action: WatchdogAction, nextLevel: Int) {
        self.watchdogLevel = nextLevel
        self.watchdogCounts[action, default: 0] &+= 1
        let seconds = Int(self.options.watchdogTimeout.components.seconds)
        let reason = "no advertisement for \(seconds) s while discovering"
        self.onWatchdog?(action, reason)
        let adapter = self.adapterPath
        switch action {
        case .restartDiscovery:
            self.bluez.stopDiscovery(adapter: adapter) { [weak self] _ in
                guard let self else { return }
                self.discoveryStarted = false
                self.reconcileDiscovery()
            }
        case .powerCycle:
            self.bluez.setPowered(adapter: adapter, false) { [weak self] _ in
                guard let self else { return }
                _ = try? self.loop.scheduleTimer(after: .seconds(2)) { [weak self] in
                    guard let self else { return }
                    self.bluez.setPowered(adapter: adapter, true) { _ in }
                }
            }
        case .giveUp:
            self.watchdogReason = "Bluetooth stuck: \(reason), after a discovery restart and an adapter power cycle"
            self.updateStatus()
        }
    }
}
