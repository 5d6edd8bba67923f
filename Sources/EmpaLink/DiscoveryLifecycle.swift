/// The BLE manager's discovery as a pure state machine: events in, actions out (SPEC §5, §15).
///
/// It decides when BlueZ discovery runs — wanted by the application, the adapter usable, a wristband still to be
/// found, and in background mode only during a scan window or not at all where a passive advertisement monitor
/// replaced it — and runs the stuck-discovery watchdog. ``EmpaticaAPI`` feeds it the application's requests, BlueZ's
/// replies and the timers, and executes what it returns. One discovery request is in flight at a time.
///
/// Each event comes with ``Conditions``: what the API sees at that moment. Which actions an event yields depends
/// only on the state and those conditions.
struct DiscoveryLifecycle: Sendable, Hashable {
    struct Conditions: Sendable, Hashable {
        /// `org.bluez` has an owner.
        var bluezAvailable = true
        /// BlueZ is up and the adapter present and powered.
        var adapterUsable = true
        /// A reason to scan remains (the agent: a whitelisted wristband is not connected).
        var demand = true

        init(bluezAvailable: Bool = true, adapterUsable: Bool = true, demand: Bool = true) {
            self.bluezAvailable = bluezAvailable
            self.adapterUsable = adapterUsable
            self.demand = demand
        }
    }

    /// BlueZ's answer to the discovery filter and `StartDiscovery`.
    enum StartReply: Sendable, Hashable {
        case started
        /// `org.bluez.Error.InProgress`. BlueZ 5.66 gives it for two things that cannot be told apart: our session
        /// already exists, or the kernel refused to start scanning for now (an LE connection being made, a stop
        /// still pending) and BlueZ dropped the session it had just made for us. So our session may or may not be
        /// open: clear it with a `StopDiscovery`, then start again after a pause.
        case busy
        case failed(name: String, message: String)
    }

    enum Event: Sendable, Hashable {
        /// ``EmpaticaAPI/discoverDevices(delegate:)``, after its authentication check.
        case discoverRequested
        /// ``EmpaticaAPI/cancelDiscovery()``.
        case cancelRequested
        /// ``EmpaticaAPI/prepareForBackground()``.
        case backgroundRequested
        /// ``EmpaticaAPI/prepareForResume()``.
        case resumeRequested
        /// The answer to ``Action/registerMonitor``: whether BlueZ accepted the passive monitor.
        case monitorRegistered(Bool)
        /// The background duty cycle's period began: open a scan window.
        case dutyCycleTick
        /// The background scan window is over.
        case windowEnded
        case startReplied(StartReply)
        /// `StopDiscovery` answered (stopped, or there was no session to stop).
        case stopReplied
        /// Something discovery depends on may have changed (adapter, demand): reconcile.
        case reconcile
        /// BlueZ's adapter was seen unusable: no discovery session survives that.
        case adapterUnusable
        /// `org.bluez` lost its owner: no session, and no request will be answered.
        case bluezGone
        /// An advertisement arrived (a device appeared, its RSSI changed, the monitor matched): discovery works.
        case advertisement
        /// The watchdog's one-second tick.
        case watchdogTick
        /// The `StopDiscovery` of a watchdog restart answered.
        case restartStopReplied
        /// The pause after a refused or busy `StartDiscovery` is over.
        case retryTick
    }

    enum Action: Sendable, Hashable {
        /// Set the discovery filter, then `StartDiscovery`; answer with ``Event/startReplied(_:)``.
        case startDiscovery
        /// `StopDiscovery`; answer with ``Event/stopReplied``.
        case stopDiscovery
        /// Register the passive advertisement monitor; answer with ``Event/monitorRegistered(_:)``.
        case registerMonitor
        case unregisterMonitor
        /// Tick ``Event/dutyCycleTick`` every background interval.
        case startDutyCycle
        case stopDutyCycle
        /// Raise ``Event/windowEnded`` after the background window.
        case armWindow
        case cancelWindow
        /// Tick ``Event/watchdogTick`` every second.
        case startWatchdog
        case stopWatchdog
        /// Count and report a watchdog escalation, and carry it out: a restart stops discovery (answer with
        /// ``Event/restartStopReplied``), a power cycle turns the adapter off and on.
        case escalate(EmpaticaAPI.WatchdogAction)
        /// Count a refused `StartDiscovery` and keep its error.
        case discoveryFailed(name: String, message: String)
        /// Raise ``Event/retryTick`` once, after `seconds`.
        case armRetry(seconds: Int)
        /// Recompute ``EmpaticaAPI/status`` (the watchdog's verdict changed).
        case updateStatus
    }

    private(set) var wantsDiscovery = false
    private(set) var inBackground = false
    /// In background mode, whether a scan window is open (always true in the foreground).
    private(set) var windowOpen = true
    /// Whether our discovery session is open at BlueZ.
    private(set) var started = false
    private(set) var requestInFlight = false
    /// A refused or busy start waits for ``Event/retryTick`` before the next one.
    private(set) var retryArmed = false
    /// The next pause after a refusal: 1 s, doubling to ``maximumRetrySeconds``, back to 1 s once started.
    private(set) var retrySeconds = 1
    /// After `InProgress` our session may still be open at BlueZ: stop it before starting again.
    private(set) var clearFirst = false
    private(set) var dutyCycling = false
    private(set) var windowArmed = false
    private(set) var watchdogRunning = false
    /// Seconds of wanted discovery without an advertisement.
    private(set) var silentSeconds = 0
    private(set) var watchdogLevel = 0
    /// Why discovery is reported unavailable after the watchdog gave up, until an advertisement comes.
    private(set) var watchdogReason: String?
    /// The watchdog's period in whole seconds; 0 disables it.
    let watchdogSeconds: Int

    /// The longest pause between retries of a refused `StartDiscovery`.
    static let maximumRetrySeconds = 30

    init(watchdogSeconds: Int) {
        self.watchdogSeconds = max(0, watchdogSeconds)
    }

    /// Whether discovery should be running under `conditions`.
    func wanted(_ conditions: Conditions) -> Bool {
        self.wantsDiscovery && conditions.adapterUsable && (!self.inBackground || self.windowOpen)
            && conditions.demand
    }

    mutating func handle(_ event: Event, conditions: Conditions) -> [Action] {
        var out: [Action] = []
        switch event {
        case .discoverRequested:
            self.wantsDiscovery = true
            self.reconcile(conditions, &out)
        case .cancelRequested:
            self.wantsDiscovery = false
            self.reconcile(conditions, &out)
        case .backgroundRequested:
            guard !self.inBackground else { break }
            self.inBackground = true
            self.windowOpen = false
            self.reconcile(conditions, &out)
            out.append(.registerMonitor)
        case .resumeRequested:
            guard self.inBackground else { break }
            self.inBackground = false
            out.append(.unregisterMonitor)
            if self.dutyCycling {
                self.dutyCycling = false
                out.append(.stopDutyCycle)
            }
            if self.windowArmed {
                self.windowArmed = false
                out.append(.cancelWindow)
            }
            self.windowOpen = true
            self.reconcile(conditions, &out)
        case .monitorRegistered(let registered):
            // A monitor replaces discovery in the background; without one, discovery is duty-cycled.
            guard self.inBackground, !registered, !self.dutyCycling else { break }
            self.dutyCycling = true
            out.append(.startDutyCycle)
            // Start with a window so a missing wristband is looked for at once.
            self.openWindow(conditions, &out)
        case .dutyCycleTick:
            self.openWindow(conditions, &out)
        case .windowEnded:
            guard self.windowArmed else { break }
            self.windowArmed = false
            guard self.inBackground else { break }
            self.windowOpen = false
            self.reconcile(conditions, &out)
        case .startReplied(let reply):
            guard self.requestInFlight else { break }
            self.requestInFlight = false
            switch reply {
            case .started:
                self.started = true
                self.retrySeconds = 1
                self.startWatchdog(&out)
            case .busy:
                self.clearFirst = true
                out.append(.discoveryFailed(name: "org.bluez.Error.InProgress", message: "BlueZ busy"))
                self.armRetry(&out)
            case .failed(let name, let message):
                out.append(.discoveryFailed(name: name, message: message))
                self.armRetry(&out)
            }
            self.reconcile(conditions, &out)
        case .stopReplied:
            guard self.requestInFlight else { break }
            // Stopped, or there was no session to stop: either way none is open now.
            self.requestInFlight = false
            self.started = false
            self.reconcile(conditions, &out)
        case .reconcile:
            self.reconcile(conditions, &out)
        case .adapterUnusable:
            // Powering off ends every session.
            self.started = false
            self.clearFirst = false
        case .bluezGone:
            self.started = false
            self.requestInFlight = false
            self.clearFirst = false
            self.retrySeconds = 1
        case .advertisement:
            self.silentSeconds = 0
            // Also between the slow retry's reset of the level and its next restart: the reason is still shown.
            if self.watchdogLevel > 0 || self.watchdogReason != nil {
                self.watchdogLevel = 0
                self.watchdogReason = nil
                out.append(.updateStatus)
            }
        case .watchdogTick:
            self.watchdogTick(conditions, &out)
        case .restartStopReplied:
            self.started = false
            self.reconcile(conditions, &out)
        case .retryTick:
            guard self.retryArmed else { break }
            self.retryArmed = false
            self.reconcile(conditions, &out)
        }
        return out
    }

    /// Starts or stops BlueZ discovery to match ``wanted(_:)``; one request at a time.
    private mutating func reconcile(_ conditions: Conditions, _ out: inout [Action]) {
        guard !self.requestInFlight, conditions.bluezAvailable else { return }
        let wanted = self.wanted(conditions)
        if wanted && !self.started {
            // A refusal is not retried at once: a persistent one would turn into a busy loop of calls.
            guard !self.retryArmed else { return }
            self.requestInFlight = true
            if self.clearFirst {
                // Its answer (stopped, or no session) reconciles again, which starts.
                self.clearFirst = false
                out.append(.stopDiscovery)
            } else {
                out.append(.startDiscovery)
            }
        } else if !wanted && (self.started || self.clearFirst) {
            self.requestInFlight = true
            self.clearFirst = false
            out.append(.stopDiscovery)
        }
    }

    private mutating func armRetry(_ out: inout [Action]) {
        guard !self.retryArmed else { return }
        self.retryArmed = true
        out.append(.armRetry(seconds: self.retrySeconds))
        self.retrySeconds = min(self.retrySeconds * 2, Self.maximumRetrySeconds)
    }

    private mutating func openWindow(_ conditions: Conditions, _ out: inout [Action]) {
        guard self.inBackground else { return }
        self.windowOpen = true
        self.reconcile(conditions, &out)
        if self.windowArmed { out.append(.cancelWindow) }
        self.windowArmed = true
        out.append(.armWindow)
    }

    private mutating func startWatchdog(_ out: inout [Action]) {
        guard self.watchdogSeconds > 0, !self.watchdogRunning else { return }
        self.watchdogRunning = true
        out.append(.startWatchdog)
    }

    /// Only time spent discovering for a reason counts: a quiet background pause or a fleet that is all connected is
    /// not a stuck adapter. The tick stops with discovery (no idle wake-ups) and starts again with it.
    private mutating func watchdogTick(_ conditions: Conditions, _ out: inout [Action]) {
        guard self.watchdogRunning else { return }
        guard self.started, self.wanted(conditions) else {
            if !self.started {
                self.watchdogRunning = false
                out.append(.stopWatchdog)
            }
            return
        }
        self.silentSeconds += 1
        guard self.silentSeconds >= self.watchdogSeconds else { return }
        switch self.watchdogLevel {
        case 0:
            self.escalate(.restartDiscovery, to: 1, &out)
        case 1:
            self.escalate(.powerCycle, to: 2, &out)
        case 2:
            self.escalate(.giveUp, to: 3, &out)
            self.watchdogReason = "Bluetooth stuck: no advertisement for \(self.watchdogSeconds) s while discovering, "
                + "after a discovery restart and an adapter power cycle"
            out.append(.updateStatus)
        default:
            // Keep retrying slowly: every fourth period, start over from a discovery restart.
            if self.silentSeconds >= self.watchdogSeconds * 4 { self.watchdogLevel = 0 }
            return
        }
        self.silentSeconds = 0
    }

    private mutating func escalate(_ action: EmpaticaAPI.WatchdogAction, to level: Int, _ out: inout [Action]) {
        self.watchdogLevel = level
        out.append(.escalate(action))
    }
}
