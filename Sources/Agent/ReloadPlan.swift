import Config

/// What a SIGHUP reload changes (SPEC §4): the pure half of ``AgentRuntime/reload()``, so that the decision can be
/// tested without a daemon.
///
/// Whitelist, `[publish]`, `bluetooth.mode` and the API key (`auth`, unless the keyring path moved) apply live;
/// everything else keeps its running value and is named in ``restartNeeded``.
struct ReloadPlan: Equatable {
    /// The configuration to run with from now on: the running one with the live parts of the new one.
    var applied: AgentConfiguration
    /// The tables or keys whose changes wait for a restart, in a fixed order, for one warning line.
    var restartNeeded: [String]
    /// The power mode changed (`bluetooth.mode`).
    var modeChanged: Bool
    /// The enabled streams changed (`publish.streams`).
    var streamsChanged: Bool
    /// The whitelist changed (serials, addresses or labels).
    var wristbandsChanged: Bool

    init(running old: AgentConfiguration, loaded new: AgentConfiguration) {
        var restartNeeded: [String] = []
        if new.mqtt != old.mqtt { restartNeeded.append("[mqtt]") }
        if new.agent != old.agent { restartNeeded.append("[agent]") }
        if new.auth.keyring != old.auth.keyring { restartNeeded.append("auth.keyring") }
        if new.spool != old.spool { restartNeeded.append("[spool]") }
        if new.control != old.control { restartNeeded.append("[control]") }
        // Fleet mode on or off changes who may connect what: the coordinator, its broker connection and its will
        // exist from the start or not at all.
        if new.fleet != old.fleet { restartNeeded.append("[fleet]") }
        if old.fleet.enabled && new.wristbands.map(\.serial) != old.wristbands.map(\.serial) {
            restartNeeded.append("the fleet's wristbands (a removed one is disconnected now, a new one is claimed "
                                     + "after a restart)")
        }
        var bluetooth = new.bluetooth
        bluetooth.mode = old.bluetooth.mode
        if bluetooth != old.bluetooth { restartNeeded.append("[bluetooth] (except mode)") }
        // Keep what needs a restart as it runs; take the live parts.
        var applied = old
        applied.wristbands = new.wristbands
        applied.publish = new.publish
        applied.bluetooth.mode = new.bluetooth.mode
        if new.auth.keyring == old.auth.keyring { applied.auth = new.auth }
        self.applied = applied
        self.restartNeeded = restartNeeded
        self.modeChanged = new.bluetooth.mode != old.bluetooth.mode
        self.streamsChanged = new.publish.streams != old.publish.streams
        self.wristbandsChanged = new.wristbands != old.wristbands
    }

    /// The streams the new configuration enables.
    var enabledStreams: Set<StreamKind> {
        Set(self.applied.publish.streams.compactMap(StreamKind.init(rawValue:)))
    }
}
