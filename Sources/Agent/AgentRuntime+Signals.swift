#if canImport(Glibc)
import Glibc
#endif
import Config
import EmpaLink
import EventLoop
import Posix

/// Signals (SPEC §12): SIGTERM/SIGINT shut down, SIGHUP reloads, SIGUSR1 background, SIGUSR2 resume.
extension AgentRuntime {
    /// The signals the agent handles; block them in `main` before any thread starts.
    public static let handledSignals: [CInt] = [SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2]

    /// Routes the handled signals to the loop.
    ///
    /// - Throws: a one-line ``AgentError`` when one cannot be installed (not blocked in `main`, no `signalfd`):
    ///   an agent that would silently ignore SIGTERM and SIGHUP must not start.
    func installSignals() throws(AgentError) {
        let handlers: [(CInt, String, (CInt) -> Void)] = [
            (SIGTERM, "SIGTERM", { [unowned self] _ in self.shutdown() }),
            (SIGINT, "SIGINT", { [unowned self] _ in self.shutdown() }),
            (SIGHUP, "SIGHUP", { [unowned self] _ in self.reload() }),
            (SIGUSR1, "SIGUSR1", { [unowned self] _ in _ = self.setMode(.background, reason: "SIGUSR1") }),
            (SIGUSR2, "SIGUSR2", { [unowned self] _ in _ = self.setMode(.active, reason: "SIGUSR2") }),
        ]
        for (signal, name, handler) in handlers {
            do throws(Errno) {
                try self.loop.onSignal(signal, handler: handler)
            } catch {
                throw AgentError("cannot handle \(name): \(error)")
            }
        }
    }

    /// Switches the power mode (`prepareForBackground` / `prepareForResume`).
    ///
    /// - Returns: a one-line result.
    func setMode(_ mode: AgentConfiguration.PowerMode, reason: String) -> String {
        guard mode != self.mode else { return "already \(mode.rawValue)" }
        self.mode = mode
        for api in self.apis {
            if mode == .background { api.prepareForBackground() } else { api.prepareForResume() }
        }
        for publisher in self.publishers.values { publisher.flushAll() }
        self.scheduleFlush()
        self.publishStatus(online: true)
        self.updateSystemdStatus()
        if let skipped = self.modeLog.admit() {
            let more = skipped > 0 ? " (\(skipped) more mode changes not logged)" : ""
            self.logger.info("mode \(mode.rawValue) (\(reason))\(more)", ["MODE": mode.rawValue])
        }
        return "mode \(mode.rawValue)"
    }

    /// Re-reads the configuration file. Whitelist, publish, mode and API key changes apply live (the key file and
    /// the keyring are re-read too); an invalid file, or one whose key file or keyring ``ConfigurationCheck``
    /// refuses, is rejected with its errors logged and the running configuration kept.
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
        // What would stop a start stops a reload: an API key file or keyring that cannot be read, a key the
        // keyring refuses.
        let problems = ConfigurationCheck.run(new).filter { $0.severity == .error }
        guard problems.isEmpty else {
            for problem in problems {
                self.logger.error("reload rejected: \(problem.formatted(path: self.configPath))")
            }
            self.logger.error("reload rejected: keeping the running configuration")
            return
        }
        let plan = ReloadPlan(running: self.configuration, loaded: new)
        self.configuration = plan.applied
        self.reloadAPIKey()
        self.enabledStreams = plan.enabledStreams
        for (serial, publisher) in self.publishers {
            publisher.label = new.wristbands.first { $0.serial == serial }?.label ?? ""
        }
        if plan.modeChanged {
            _ = self.setMode(new.bluetooth.mode, reason: "reload")
        }
        self.scheduleFlush()
        self.scheduleMetrics()
        self.reconcileConnections()
        self.lastDevicesSummary = ""
        self.publishDevices()
        self.logger.info("configuration reloaded: \(new.wristbands.count) wristband(s) whitelisted")
        if !plan.restartNeeded.isEmpty {
            self.logger.warn("changes to \(plan.restartNeeded.joined(separator: ", ")) take effect after a restart")
        }
    }

    /// Re-reads the API key (`auth.api_key` or `auth.api_key_file`) and the keyring, so that `empalinkctl key add`
    /// and a new key in the key file take effect on SIGHUP: wristbands the key now unlocks are connected, ones it
    /// no longer unlocks are disconnected.
    func reloadAPIKey() {
        let key: String?
        do {
            key = try APIKey.load(self.configuration.auth)
        } catch {
            // ConfigurationCheck read the same file a moment ago; keep the running key if it changed since.
            self.logger.error("reload: \(error.message); keeping the running API key")
            return
        }
        self.apiKey = key
        guard let first = self.apis.first else { return }  // connectBus authenticates when the bus is back
        guard let key else {
            self.logger.warn("reload: no API key configured; wristbands already unlocked stay unlocked until a "
                                 + "restart")
            return
        }
        do throws(EmpaLinkError) {
            for api in self.apis {
                let wasAuthenticated = api.isAuthenticated
                try api.authenticate(apiKey: key)
                if !wasAuthenticated { try api.discoverDevices(delegate: self) }
            }
            let unlocked = first.grant?.devices.map { $0.sorted().joined(separator: ", ") } ?? "every wristband"
            self.logger.info("API key and keyring re-read: the key unlocks \(unlocked.isEmpty ? "none" : unlocked)")
        } catch {
            self.logger.error("reload: \(error); keeping the running API key")
        }
    }

    /// SIGTERM: stop scanning, flush batches, publish the offline status, disconnect, exit 0 within 5 s.
    func shutdown() {
        guard !self.shuttingDown else { return }
        self.shuttingDown = true
        self.notifier.stopping()
        self.logger.info("shutting down")
        for api in self.apis { api.cancelDiscovery() }
        for publisher in self.publishers.values { publisher.flushAll() }
        for device in self.devices where device.isConnectionWanted {
            device.disconnect()
            // Retained status says so now; BlueZ's confirmation may come after we have left the broker.
            self.publishDeviceStatus(device, overriding: .disconnected)
        }
        self.shutdownFleet()
        self.publishStatus(online: false)
        let deadline = MonotonicInstant.now.advanced(by: .seconds(3))
        // Give queued messages a moment to be acknowledged and BlueZ time to answer a subscription still in flight
        // (leaving the bus before it does crashes bluetoothd 5.66: ``EmpaticaAPI/isSubscribing``), then leave.
        do throws(Errno) {
            _ = try self.loop.scheduleTimer(after: .milliseconds(50), repeating: .milliseconds(50)) {
                [unowned self] in
                let settled = self.mqtt.inflightCount == 0 && (self.fleet?.mqtt.inflightCount ?? 0) == 0
                    && !self.apis.contains(where: \.isSubscribing)
                if settled || MonotonicInstant.now >= deadline { self.leave() }
            }
        } catch {
            // Without a timer there is no waiting for acknowledgements: leave now rather than ignore SIGTERM.
            self.logger.error("shutdown: cannot wait for acknowledgements (\(error)); leaving now")
            self.leave()
        }
    }

    /// Sends DISCONNECT and stops the loop 100 ms later (at once when no timer can be had).
    func leave() {
        guard !self.leaving else { return }
        self.leaving = true
        self.fleet?.mqtt.disconnect()
        self.mqtt.disconnect()
        do throws(Errno) {
            _ = try self.loop.scheduleTimer(after: .milliseconds(100)) { [unowned self] in self.loop.stop() }
        } catch {
            self.loop.stop()
        }
    }
}
