#if canImport(Glibc)
import Glibc
#endif
import Config
import EmpaLink
import EventLoop

/// Signals (SPEC §12): SIGTERM/SIGINT shut down, SIGHUP reloads, SIGUSR1 background, SIGUSR2 resume.
extension AgentRuntime {
    /// The signals the agent handles; block them in `main` before any thread starts.
    public static let handledSignals: [CInt] = [SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2]

    func installSignals() {
        try? self.loop.onSignal(SIGTERM) { [unowned self] _ in self.shutdown() }
        try? self.loop.onSignal(SIGINT) { [unowned self] _ in self.shutdown() }
        try? self.loop.onSignal(SIGHUP) { [unowned self] _ in self.reload() }
        try? self.loop.onSignal(SIGUSR1) { [unowned self] _ in _ = self.setMode(.background, reason: "SIGUSR1") }
        try? self.loop.onSignal(SIGUSR2) { [unowned self] _ in _ = self.setMode(.active, reason: "SIGUSR2") }
    }

    /// Switches the power mode (`prepareForBackground` / `prepareForResume`).
    ///
    /// - Returns: a one-line result.
    func setMode(_ mode: AgentConfiguration.PowerMode, reason: String) -> String {
        guard mode != self.mode else { return "already \(mode.rawValue)" }
        self.mode = mode
        if mode == .background {
            self.api?.prepareForBackground()
        } else {
            self.api?.prepareForResume()
        }
        for publisher in self.publishers.values { publisher.flushAll() }
        self.scheduleFlush()
        self.publishStatus(online: true)
        self.updateSystemdStatus()
        self.logger.info("mode \(mode.rawValue) (\(reason))", ["MODE": mode.rawValue])
        return "mode \(mode.rawValue)"
    }

    /// Re-reads the configuration file. Whitelist, publish and mode changes apply live; an invalid file is
    /// rejected with its errors logged and the running configuration kept.
    func reload() {
        let new: AgentConfiguration
        do {
            new = try ConfigurationLoader.load(path: self.configPath)
        } catch {
            for diagnostic in error.diagnostics {
                self.logger.error("reload rejected: \(diagnostic.formatted(path: self.configPath))")
            }
            self.logger.error("reload rejected: keeping the running configuration")
            return
        }
        let old = self.configuration
        var restartNeeded: [String] = []
        if new.mqtt != old.mqtt { restartNeeded.append("[mqtt]") }
        if new.agent != old.agent { restartNeeded.append("[agent]") }
        if new.auth != old.auth { restartNeeded.append("[auth]") }
        if new.spool != old.spool { restartNeeded.append("[spool]") }
        if new.control != old.control { restartNeeded.append("[control]") }
        var bluetooth = new.bluetooth
        bluetooth.mode = old.bluetooth.mode
        if bluetooth != old.bluetooth { restartNeeded.append("[bluetooth] (except mode)") }
        // Keep what needs a restart as it runs; take the live parts.
        var applied = old
        applied.wristbands = new.wristbands
        applied.publish = new.publish
        applied.bluetooth.mode = new.bluetooth.mode
        self.configuration = applied
        self.enabledStreams = Set(new.publish.streams.compactMap(StreamKind.init(rawValue:)))
        for (serial, publisher) in self.publishers {
            publisher.label = new.wristbands.first { $0.serial == serial }?.label ?? ""
        }
        if new.bluetooth.mode != old.bluetooth.mode {
            _ = self.setMode(new.bluetooth.mode, reason: "reload")
        }
        self.scheduleFlush()
        self.scheduleMetrics()
        self.reconcileConnections()
        self.lastDevicesSummary = ""
        self.publishDevices()
        self.logger.info("configuration reloaded: \(new.wristbands.count) wristband(s) whitelisted")
        if !restartNeeded.isEmpty {
            self.logger.warn("changes to \(restartNeeded.joined(separator: ", ")) take effect after a restart")
        }
    }

    /// SIGTERM: stop scanning, flush batches, publish the offline status, disconnect, exit 0 within 5 s.
    func shutdown() {
        guard !self.shuttingDown else { return }
        self.shuttingDown = true
        self.notifier.stopping()
        self.logger.info("shutting down")
        self.api?.cancelDiscovery()
        for publisher in self.publishers.values { publisher.flushAll() }
        for device in self.api?.devices ?? [] where device.isConnectionWanted {
            device.disconnect()
            // Retained status says so now; BlueZ's confirmation may come after we have left the broker.
            self.publishDeviceStatus(device, overriding: .disconnected)
        }
        self.publishStatus(online: false)
        let deadline = MonotonicInstant.now.advanced(by: .seconds(3))
        // Give queued messages a moment to be acknowledged, then leave cleanly.
        _ = try? self.loop.scheduleTimer(after: .milliseconds(50), repeating: .milliseconds(50)) { [unowned self] in
            if self.mqtt.inflightCount == 0 || MonotonicInstant.now >= deadline {
                self.mqtt.disconnect()
                _ = try? self.loop.scheduleTimer(after: .milliseconds(100)) { [unowned self] in self.loop.stop() }
            }
        }
    }
}
