import BlueZ
import DBus
import EventLoop

/// Discovery and the power modes (`prepareForBackground` / `prepareForResume`).
extension EmpaticaAPI {
    /// Starts discovering wristbands; `delegate` hears the status and every change in the device list.
    ///
    /// Discovery goes on (restarted after BlueZ restarts and adapter power cycles) until ``cancelDiscovery()``.
    ///
    /// - Throws: ``EmpaLinkError/notAuthenticated`` before a successful authentication.
    public func discoverDevices(delegate: any EmpaticaDelegate) throws(EmpaLinkError) {
        guard self.isAuthenticated else { throw .notAuthenticated }
        self.delegate = delegate
        self.wantsDiscovery = true
        delegate.didUpdateBLEStatus(self.status)
        self.reportDevices()
        self.reconcileDiscovery()
    }

    /// Stops discovering. Connected wristbands stay connected.
    public func cancelDiscovery() {
        self.wantsDiscovery = false
        self.reconcileDiscovery()
    }

    /// Saves power. Where the adapter offers or-pattern advertisement monitors, a passive monitor for the E4
    /// family replaces discovery; otherwise discovery runs only `backgroundScanWindow` every
    /// `backgroundScanInterval`. Connected wristbands keep streaming.
    public func prepareForBackground() {
        guard !self.isInBackground else { return }
        self.isInBackground = true
        self.windowOpen = false
        self.reconcileDiscovery()
        self.registerMonitor { [weak self] registered in
            guard let self, self.isInBackground, !registered else { return }
            self.startDutyCycle()
        }
    }

    func startDutyCycle() {
        guard self.dutyCycleTimer == nil else { return }
        let interval = self.options.backgroundScanInterval
        self.dutyCycleTimer = try? self.loop.scheduleTimer(after: interval, repeating: interval) { [weak self] in
            self?.openScanWindow()
        }
        // Start with a window so a missing wristband is looked for at once.
        self.openScanWindow()
    }

    /// Returns to continuous discovery.
    public func prepareForResume() {
        guard self.isInBackground else { return }
        self.isInBackground = false
        self.unregisterMonitor()
        if let timer = self.dutyCycleTimer { self.loop.cancel(timer) }
        self.dutyCycleTimer = nil
        self.windowOpen = true
        self.reconcileDiscovery()
    }

    func openScanWindow() {
        guard self.isInBackground else { return }
        self.windowOpen = true
        self.reconcileDiscovery()
        _ = try? self.loop.scheduleTimer(after: self.options.backgroundScanWindow) { [weak self] in
            guard let self, self.isInBackground else { return }
            self.windowOpen = false
            self.reconcileDiscovery()
        }
    }

    /// Whether discovery should be running now.
    var discoveryWanted: Bool {
        self.wantsDiscovery && self.adapterUsable && (!self.isInBackground || self.windowOpen)
            && self.discoveryDemand()
    }

    /// Whether any reason to scan remains; the agent narrows this (all whitelisted wristbands connected).
    func discoveryDemand() -> Bool {
        self.scanPolicy?() ?? true
    }

    /// Starts or stops BlueZ discovery to match ``discoveryWanted``. Idempotent; one request at a time.
    public func reconcileDiscovery() {
        guard !self.discoveryRequestInFlight, self.bluez.isAvailable else { return }
        let adapter = self.adapterPath
        if self.discoveryWanted && !self.discoveryStarted {
            self.discoveryRequestInFlight = true
            let threshold = self.options.discoveryRSSIThreshold
            self.bluez.setDiscoveryFilter(adapter: adapter, rssi: threshold) { [weak self] _ in
                // A refused filter still leaves discovery useful; the RSSI is re-checked on every device anyway.
                guard let self else { return }
                self.bluez.startDiscovery(adapter: adapter) { [weak self] result in
                    guard let self else { return }
                    self.discoveryRequestInFlight = false
                    switch result {
                    case .success:
                        self.discoveryStarted = true
                        self.startWatchdog()
                    case .failure(let error) where error.name == BlueZNames.Error.inProgress:
                        // Our session already exists (BlueZ counts sessions per client).
                        self.discoveryStarted = true
                        self.startWatchdog()
                    case .failure(let error):
                        self.discoveryFailures &+= 1
                        self.lastDiscoveryError = .bluez(name: error.name, message: error.message)
                    }
                    self.reconcileDiscovery()
                }
            }
        } else if !self.discoveryWanted && self.discoveryStarted {
            self.discoveryRequestInFlight = true
            self.bluez.stopDiscovery(adapter: adapter) { [weak self] _ in
                guard let self else { return }
                // Stopped, or there was no session to stop: either way none is open now.
                self.discoveryRequestInFlight = false
                self.discoveryStarted = false
                self.reconcileDiscovery()
            }
        }
    }
}
