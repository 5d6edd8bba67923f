import BlueZ
import DBus
import EventLoop

/// Discovery and the power modes (`prepareForBackground` / `prepareForResume`). ``DiscoveryLifecycle`` decides;
/// this file executes its actions.
extension EmpaticaAPI {
    /// Starts discovering wristbands; `delegate` hears the status and every change in the device list.
    ///
    /// Discovery goes on (restarted after BlueZ restarts and adapter power cycles) until ``cancelDiscovery()``.
    ///
    /// - Throws: ``EmpaLinkError/notAuthenticated`` before a successful authentication.
    public func discoverDevices(delegate: any EmpaticaDelegate) throws(EmpaLinkError) {
        guard self.isAuthenticated else { throw .notAuthenticated }
        self.delegate = delegate
        delegate.didUpdateBLEStatus(self.status)
        self.reportDevices()
        self.handle(discovery: .discoverRequested)
    }

    /// Stops discovering. Connected wristbands stay connected.
    public func cancelDiscovery() {
        self.handle(discovery: .cancelRequested)
    }

    /// Saves power. Where the adapter offers or-pattern advertisement monitors, a passive monitor for the E4
    /// family replaces discovery; otherwise discovery runs only `backgroundScanWindow` every
    /// `backgroundScanInterval`. Connected wristbands keep streaming.
    public func prepareForBackground() {
        self.handle(discovery: .backgroundRequested)
    }

    /// Returns to continuous discovery.
    public func prepareForResume() {
        self.handle(discovery: .resumeRequested)
    }

    /// Starts or stops BlueZ discovery to match what is wanted now (the adapter, the agent's
    /// ``scanPolicy``). Idempotent; one request at a time.
    public func reconcileDiscovery() {
        self.handle(discovery: .reconcile)
    }

    /// What discovery depends on, as the API sees it now.
    func discoveryConditions() -> DiscoveryLifecycle.Conditions {
        DiscoveryLifecycle.Conditions(bluezAvailable: self.bluez.isAvailable, adapterUsable: self.adapterUsable,
                                      demand: self.scanPolicy?() ?? true)
    }

    /// Hands `event` to the discovery lifecycle and executes its actions, run to completion (an event raised
    /// while actions run is handled after them).
    func handle(discovery event: DiscoveryLifecycle.Event) {
        self.pendingDiscoveryEvents.append(event)
        guard !self.handlingDiscoveryEvents else { return }
        self.handlingDiscoveryEvents = true
        defer { self.handlingDiscoveryEvents = false }
        var index = 0
        while index < self.pendingDiscoveryEvents.count {
            let next = self.pendingDiscoveryEvents[index]
            index += 1
            for action in self.discovery.handle(next, conditions: self.discoveryConditions()) {
                self.perform(action)
            }
        }
        self.pendingDiscoveryEvents.removeAll(keepingCapacity: true)
    }

    private func perform(_ action: DiscoveryLifecycle.Action) {
        let adapter = self.adapterPath
        switch action {
        case .startDiscovery:
            let threshold = self.options.discoveryRSSIThreshold
            self.bluez.setDiscoveryFilter(adapter: adapter, rssi: threshold) { [weak self] _ in
                // A refused filter still leaves discovery useful; the RSSI is re-checked on every device anyway.
                guard let self else { return }
                self.bluez.startDiscovery(adapter: adapter) { [weak self] result in
                    guard let self else { return }
                    switch result {
                    case .success:
                        self.handle(discovery: .startReplied(.started))
                    case .failure(let error) where error.name == BlueZNames.Error.inProgress:
                        self.handle(discovery: .startReplied(.busy))
                    case .failure(let error):
                        self.handle(discovery: .startReplied(.failed(name: error.name, message: error.message)))
                    }
                }
            }
        case .stopDiscovery:
            self.bluez.stopDiscovery(adapter: adapter) { [weak self] _ in self?.handle(discovery: .stopReplied) }
        case .registerMonitor:
            self.registerMonitor { [weak self] registered in self?.handle(discovery: .monitorRegistered(registered)) }
        case .unregisterMonitor:
            self.unregisterMonitor()
        case .startDutyCycle:
            let interval = self.options.backgroundScanInterval
            // Throws only once the loop is closed, when nothing runs any more.
            self.dutyCycleTimer = try? self.loop.scheduleTimer(after: interval, repeating: interval) { [weak self] in
                self?.handle(discovery: .dutyCycleTick)
            }
        case .stopDutyCycle:
            if let timer = self.dutyCycleTimer { self.loop.cancel(timer) }
            self.dutyCycleTimer = nil
        case .armWindow:
            self.windowTimer = try? self.loop.scheduleTimer(after: self.options.backgroundScanWindow) { [weak self] in
                guard let self else { return }
                self.windowTimer = nil
                self.handle(discovery: .windowEnded)
            }
        case .cancelWindow:
            if let timer = self.windowTimer { self.loop.cancel(timer) }
            self.windowTimer = nil
        case .startWatchdog:
            self.watchdogTimer = try? self.loop.scheduleTimer(after: .seconds(1), repeating: .seconds(1)) {
                [weak self] in
                self?.handle(discovery: .watchdogTick)
            }
        case .stopWatchdog:
            if let timer = self.watchdogTimer { self.loop.cancel(timer) }
            self.watchdogTimer = nil
        case .escalate(let step):
            self.escalate(step)
        case .discoveryFailed(let name, let message):
            self.discoveryFailures &+= 1
            self.lastDiscoveryError = .bluez(name: name, message: message)
        case .armRetry(let seconds):
            // Throws only once the loop is closed, when nothing runs any more.
            _ = try? self.loop.scheduleTimer(after: .seconds(Int64(seconds))) { [weak self] in
                self?.handle(discovery: .retryTick)
            }
        case .updateStatus:
            self.updateStatus()
        }
    }
}
