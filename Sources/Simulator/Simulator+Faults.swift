/// Faults from the scenario file and the control interface.
extension Simulator {
    /// Applies a fault.
    ///
    /// - Returns: `nil` on success, or why it could not be applied (an unknown device).
    func apply(_ action: FaultAction) -> String? {
        self.faultsApplied += 1
        let now = self.now
        switch action {
        case .disconnect(let selector):
            let targets = self.devices(matching: selector)
            guard !targets.isEmpty else { return "no device matches '\(selector)'" }
            for device in targets where device.state != .disconnected {
                self.dropConnection(device, reason: "link loss (fault)", emit: true)
            }
        case .outOfRange(let selector, let seconds):
            let targets = self.devices(matching: selector)
            guard !targets.isEmpty else { return "no device matches '\(selector)'" }
            for device in targets {
                device.outOfRangeUntil = seconds > 0 ? now + seconds : 0
                if seconds > 0 && device.state != .disconnected {
                    self.dropConnection(device, reason: "out of range (fault)", emit: true)
                }
            }
        case .packetLoss(let selector, let rate):
            let targets = self.devices(matching: selector)
            guard !targets.isEmpty else { return "no device matches '\(selector)'" }
            for device in targets { device.packetLoss = min(max(rate, 0), 1) }
        case .corruption(let selector, let rate):
            let targets = self.devices(matching: selector)
            guard !targets.isEmpty else { return "no device matches '\(selector)'" }
            for device in targets { device.corruption = min(max(rate, 0), 1) }
        case .powerOff(let seconds, let index):
            guard index < self.adapters.count else {
                return "no adapter hci\(index) (the board has \(self.adapters.count))"
            }
            let adapter = self.adapters[index]
            self.setPowered(false, adapter)
            if let timer = adapter.powerTimer { _ = self.loop.cancel(timer) }
            adapter.powerTimer = nil
            if seconds > 0 {
                adapter.powerTimer = self.after(milliseconds: Int(seconds * 1000)) { [weak self, unowned adapter] in
                    // The simulator owns its adapters: while it exists, so does `adapter`.
                    guard let self else { return }
                    adapter.powerTimer = nil
                    self.setPowered(true, adapter)
                }
            }
        case .restart(let seconds):
            self.restarts += 1
            self.logger.info("\(Simulator.busName) leaving the bus for \(seconds) s")
            self.bringBlueZDown()
            if let timer = self.restartTimer { _ = self.loop.cancel(timer) }
            self.restartTimer = self.after(milliseconds: Int(seconds * 1000)) { [weak self] in
                guard let self else { return }
                self.restartTimer = nil
                do {
                    try self.bringBlueZUp()
                } catch {
                    self.logger.error("cannot bring \(Simulator.busName) back: \(error)")
                }
            }
        case .tag(let selector):
            let targets = self.devices(matching: selector)
            guard !targets.isEmpty else { return "no device matches '\(selector)'" }
            for device in targets where device.state == .connected {
                if let session = device.session { self.emitTag(device, session, at: now) }
            }
        case .error(let method, let name, let message, let count):
            guard count > 0 else {
                self.injected[method] = nil
                return nil
            }
            self.injected[method] = InjectedError(error: .init(name: name, message: message), remaining: count)
        }
        return nil
    }
}
