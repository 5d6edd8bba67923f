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
/// ``DiscoveryLifecycle`` counts the silence and decides the step; this file carries it out. Every escalation is
/// reported through ``EmpaticaAPI/onWatchdog`` and counted in ``EmpaticaAPI/watchdogCounts``.
extension EmpaticaAPI {
    /// An escalation step.
    public enum WatchdogAction: String, Sendable, Equatable, CaseIterable {
        case restartDiscovery = "restart_discovery"
        case powerCycle = "power_cycle"
        case giveUp = "not_available"
    }

    /// An advertisement (a device appeared or its RSSI changed): discovery works.
    func sawAdvertisement() {
        self.handle(discovery: .advertisement)
    }

    func escalate(_ action: WatchdogAction) {
        self.watchdogCounts[action, default: 0] &+= 1
        let seconds = Int(self.options.watchdogTimeout.components.seconds)
        self.onWatchdog?(action, "no advertisement for \(seconds) s while discovering")
        let adapter = self.adapterPath
        switch action {
        case .restartDiscovery:
            self.bluez.stopDiscovery(adapter: adapter) { [weak self] _ in
                self?.handle(discovery: .restartStopReplied)
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
            // The lifecycle set the reason and asks for the status next.
            break
        }
    }
}
