#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Config
import EmpaLink
import EventLoop
import Logging
import MQTT
import Posix
import Spool

/// The forwarding agent: wristbands in through EmpaLink, per-device MQTT topics out (SPEC §8, §10, §12).
///
/// One event loop owns BlueZ, D-Bus, MQTT, timers, signals and the control socket. ``run()`` returns the process
/// exit code after a SIGTERM/SIGINT shutdown.
public final class AgentRuntime {
    /// The device profiles the agent serves, in the order they are tried (SPEC §15, §16); the fuzz target of the
    /// profiles' decoders takes its list from here.
    public static var profiles: [any DeviceProfile] { [E4DeviceProfile(), HRSDeviceProfile()] }

    public internal(set) var configuration: AgentConfiguration
    let configPath: String
    let loop: EventLoop
    let logger: Logger
    let notifier = SystemdNotifier()
    let mqtt: MQTTClient
    let outbox: Outbox
    /// The instance lock beside the control socket, held for the process's life
    /// (``lockInstance(controlSocket:logger:)``).
    let instanceLock: FileLock?
    /// The buffer every message is formatted into (one message at a time, on the loop thread).
    let json = JSONBuffer(capacity: 64 << 10)
    /// `P/A`.
    let topicBase: String

    /// Fleet mode's coordinator and broker connection; `nil` unless `fleet.enabled` (SPEC §18).
    let fleet: FleetLink?
    /// One EmpaLink API per configured adapter (`bluetooth.adapter`), in that order; empty while the system bus is
    /// away. BlueZ keeps one device object per adapter that heard a wristband, so a serial may have several
    /// managers here: at most one of them is ever wanted (``reconcileConnections()``).
    var apis: [EmpaticaAPI] = []
    var apiKey: String?
    var publishers: [String: DevicePublisher] = [:]
    var enabledStreams: Set<StreamKind>
    var mode: AgentConfiguration.PowerMode
    var flushTimer: TimerHandle?
    /// When the next flush tick publishes (ticks in between only drain; ``AgentRuntime/maximumReadDeferral``).
    var nextFlush = MonotonicInstant(nanoseconds: 0)
    var metricsTimer: TimerHandle?
    var busRetryTimer: TimerHandle?
    var control: ControlServer?
    let started = MonotonicInstant.now
    var shuttingDown = false
    /// DISCONNECT sent, the loop about to stop (``leave()``).
    var leaving = false
    var exitCode: Int32 = 0
    /// Devices seen, for the `devices` topic: serial → last published summary.
    var lastDevicesSummary = ""
    /// Journal budgets for refused commands and rescans (`AgentRuntime+Commands.swift`).
    var rejectedCommandLog = LogRateLimit(burst: AgentRuntime.commandLogBurst, window: .seconds(60))
    var rescanLog = LogRateLimit(burst: AgentRuntime.commandLogBurst, window: .seconds(60))
    /// Mode changes reach the journal at most this often too: a flood of valid, alternating mode commands is a
    /// flood of lines otherwise.
    var modeLog = LogRateLimit(burst: AgentRuntime.commandLogBurst, window: .seconds(60))
    /// Commands received and refused, for the metrics' `control`.
    var controlCounters = ControlCounters()
    /// BlueZ's malformed identifiers, signals and replies as last reported in the journal.
    var reportedMalformed: (UInt64, UInt64, UInt64) = (0, 0, 0)

    /// Whether each notification is published at once (batch interval 0).
    var flushEveryNotification: Bool { self.batchMilliseconds == 0 }

    /// `publish.bvp = "raw"`: the decoded BVP instead of the artefact-reduced one.
    var publishesRawBVP: Bool { self.configuration.publish.bvp == .raw }

    var batchMilliseconds: Int {
        self.mode == .active ? self.configuration.publish.batchMilliseconds
            : self.configuration.publish.backgroundBatchMilliseconds
    }

    /// Creates the agent; call on the thread that will run it, after ``EventLoop/blockSignals(_:)``.
    ///
    /// - Throws: a one-line ``AgentError`` (MQTT options such as an unreadable password file, the loop).
    public init(configuration: AgentConfiguration, configPath: String, logger: Logger) throws(AgentError) {
        self.configuration = configuration
        self.configPath = configPath
        self.logger = logger
        self.mode = configuration.bluetooth.mode
        self.enabledStreams = Set(configuration.publish.streams.compactMap(StreamKind.init(rawValue:)))
        self.topicBase = AgentTopics.base(prefix: configuration.mqtt.topicPrefix, agentID: configuration.agent.id)
        self.instanceLock = try Self.lockInstance(controlSocket: configuration.agent.controlSocket, logger: logger)
        do {
            self.loop = try EventLoop()
        } catch {
            throw AgentError("cannot create the event loop: \(error)")
        }
        do {
            let options = try MQTTClient.Options(configuration.mqtt, agentID: configuration.agent.id)
            self.mqtt = try MQTTClient(options: options, eventLoop: self.loop, logger: logger)
        } catch {
            throw AgentError(error.message)
        }
        self.fleet = try Self.makeFleet(configuration, loop: self.loop, logger: logger)
        var spool: Spool?
        do {
            let opened = try Spool(options: SpoolOptions(configuration.spool), eventLoop: self.loop)
            let line = "spool \(configuration.spool.directory): \(opened.recovery.summary)"
            if opened.recovery.isDamaged { logger.warn(line) } else { logger.info(line) }
            spool = opened
        } catch {
            try Self.refuseSharedSpool(error)
            // Without a spool the agent still forwards live data; what the broker cannot take is counted as dropped.
            logger.error("spool \(configuration.spool.directory) unavailable, data the broker cannot take will be "
                             + "dropped: \(error)")
        }
        self.outbox = Outbox(mqtt: self.mqtt, qos: configuration.mqtt.qos, spool: spool,
                             mode: configuration.spool.mode, loop: self.loop, logger: logger)
    }

    /// Runs until SIGTERM/SIGINT; returns the exit code.
    public func run() -> Int32 {
        do {
            try self.start()
            self.loop.run()
        } catch {
            // One line, and the SPEC §3 exit code: the agent cannot work without what failed.
            self.logger.error("\(error.message)")
            self.exitCode = 1
        }
        self.outbox.close()
        self.control?.close()
        for api in self.apis { api.close() }
        self.fleet?.mqtt.close()
        self.mqtt.close()
        self.loop.close()
        return self.exitCode
    }

    /// Installs the signal handlers and the control socket, then starts MQTT and Bluetooth.
    ///
    /// - Throws: a one-line ``AgentError`` when something the daemon cannot work without fails: a signal handler
    ///   (SIGTERM would be ignored), the control socket, the API key, libmosquitto.
    func start() throws(AgentError) {
        try self.installSignals()
        do {
            self.apiKey = try APIKey.load(self.configuration.auth)
        } catch {
            throw AgentError(error.message)
        }
        // Before anything goes online: an agent that cannot serve `empalinkctl` (mode, status) says so and stops.
        self.control = try ControlServer(path: self.configuration.agent.controlSocket, loop: self.loop,
                                         logger: self.logger) { [unowned self] line in self.controlCommand(line) }
        self.mqtt.onConnectionEvent = { [unowned self] event in self.mqttEvent(event) }
        self.mqtt.onMessage = { [unowned self] message in
            self.command(topic: message.topic, payload: Array(message.payload), retained: message.retain)
        }
        do {
            try self.mqtt.start()
        } catch {
            throw AgentError(error.message)
        }
        try self.startFleet()
        self.connectBus()
        self.scheduleFlush()
        self.scheduleMetrics()
        self.notifier.ready(status: "started; waiting for wristbands")
        self.notifier.startWatchdog(on: self.loop)
        self.logger.info("empalinkd \(Version.string) started", ["AGENT": self.configuration.agent.id,
                                                                    "MODE": self.mode.rawValue])
    }

    // MARK: Bluetooth

    /// Connects to the system bus and starts EmpaLink, one API per configured adapter; retries every 5 s while the
    /// bus is unreachable.
    func connectBus() {
        var started: [EmpaticaAPI] = []
        do throws(EmpaLinkError) {
            for adapter in self.configuration.bluetooth.adapters {
                started.append(try self.makeAPI(adapter: adapter))
            }
        } catch {
            for api in started { api.close() }
            self.logger.error("\(error); retrying in 5 s")
            self.retryBus()
            return
        }
        self.apis = started
        for api in started {
            if self.mode == .background { api.prepareForBackground() }
            guard let key = self.apiKey else { continue }
            do throws(EmpaLinkError) {
                try api.authenticate(apiKey: key)
                try api.discoverDevices(delegate: self)
            } catch {
                self.logger.error("\(error)")
            }
        }
    }

    /// The EmpaLink API of one adapter, wired to the agent.
    func makeAPI(adapter: String) throws(EmpaLinkError) -> EmpaticaAPI {
        var options = EmpaticaAPI.Options()
        let bluetooth = self.configuration.bluetooth
        options.adapter = adapter
        options.rssiMin = bluetooth.rssiMin
        options.keyringPath = self.configuration.auth.keyring
        options.connectTimeout = .seconds(Int64(bluetooth.connectTimeoutSeconds))
        options.reconnectInitial = .seconds(Int64(bluetooth.reconnectInitialSeconds))
        options.reconnectMax = .seconds(Int64(bluetooth.reconnectMaxSeconds))
        options.backgroundScanWindow = .seconds(Int64(bluetooth.backgroundScanWindowSeconds))
        options.backgroundScanInterval = .seconds(Int64(bluetooth.backgroundScanIntervalSeconds))
        options.watchdogTimeout = .seconds(Int64(bluetooth.watchdogSeconds))
        // Both kinds of device (SPEC §15, §16): a whitelist entry's `profile` picks one, else the advertisement.
        options.profiles = Self.profiles
        let api = try EmpaticaAPI(loop: self.loop, options: options)
        api.onBusLost = { [weak self, unowned api] in
            // Every adapter's API shares the bus: the first to notice ends them all.
            guard let self, !self.shuttingDown, self.apis.contains(where: { $0 === api }) else { return }
            let reason = api.busLossReason.map { " (\($0))" } ?? ""
            self.logger.error("lost the system bus\(reason); reconnecting")
            let lost = self.apis
            self.apis = []
            for other in lost where other !== api { other.close() }
            self.fleetLinksLost()
            self.retryBus()
        }
        api.scanPolicy = { [unowned self, unowned api] in self.needsDiscovery(on: api) }
        api.defersNotificationReads = self.batchMilliseconds > 0
        api.onNotificationsPending = { [unowned self] in self.armFlush() }
        api.profileAssignment = { [unowned self] address in
            self.configuration.wristbands.first { $0.address == address.description || $0.serial == address.serial }?
                .profile
        }
        api.onWatchdog = { [unowned self] action, reason in
            self.logger.warn("Bluetooth watchdog on \(adapter): \(action.rawValue) (\(reason))",
                             ["WATCHDOG": action.rawValue, "ADAPTER": adapter])
        }
        return api
    }

    func retryBus() {
        guard self.busRetryTimer == nil else { return }
        do throws(Errno) {
            self.busRetryTimer = try self.loop.scheduleTimer(after: .seconds(5)) { [weak self] in
                self?.busRetryTimer = nil
                self?.connectBus()
            }
        } catch {
            self.logger.error("cannot schedule the system bus retry: \(error); Bluetooth stays off")
        }
    }

    func isWhitelisted(_ device: EmpaticaDeviceManager) -> Bool {
        self.wristband(for: device) != nil
    }

    func wristband(for device: EmpaticaDeviceManager) -> AgentConfiguration.Wristband? {
        let address = device.address.description
        return self.configuration.wristbands.first { $0.serial == device.serialNumber || $0.address == address }
    }

    /// The device's level in its topics (`P/A/S/…`): its whitelist entry's `id`, else its serial (SPEC §16).
    func topicID(for device: EmpaticaDeviceManager) -> String {
        self.wristband(for: device)?.topicID ?? device.serialNumber
    }

    /// Every adapter's devices: a wristband heard by two adapters is here twice (see ``apis``).
    var devices: [EmpaticaDeviceManager] { self.apis.flatMap(\.devices) }

    /// One device per wristband (topic id), in address order: see ``representative(of:)``.
    var wristbandDevices: [EmpaticaDeviceManager] {
        guard self.apis.count > 1 else { return self.devices }
        var seen = Set<String>()
        var out: [EmpaticaDeviceManager] = []
        for device in self.devices.sorted(by: { $0.address < $1.address }) {
            let chosen = self.representative(of: device)
            if seen.insert(self.topicID(for: chosen)).inserted { out.append(chosen) }
        }
        return out
    }

    /// The device that speaks for `device`'s wristband when several adapters have it: the one wanted or not
    /// disconnected (at most one is), else the one heard loudest, else the first adapter's.
    func representative(of device: EmpaticaDeviceManager) -> EmpaticaDeviceManager {
        guard self.apis.count > 1 else { return device }
        let id = self.topicID(for: device)
        let all = self.devices.filter { self.topicID(for: $0) == id }
        if let active = all.first(where: { $0.isConnectionWanted || $0.deviceStatus != .disconnected }) {
            return active
        }
        return all.max { ($0.rssi ?? Int.min) < ($1.rssi ?? Int.min) } ?? device
    }

    /// Bluetooth as status and metrics report it: the best of the adapters' (`scanning` if one scans).
    var bluetoothStatus: BLEStatus {
        if self.apis.contains(where: { $0.status == .scanning }) { return .scanning }
        if self.apis.contains(where: { $0.status == .ready }) { return .ready }
        return .notAvailable
    }

    /// Discovery runs on an adapter while a whitelisted wristband is not connected (on any adapter) and that adapter
    /// has a free connection slot.
    func needsDiscovery(on api: EmpaticaAPI) -> Bool {
        guard !self.shuttingDown, self.apis.contains(where: { $0 === api }) else { return false }
        let active = api.devices.filter { $0.deviceStatus != .disconnected }.count
        guard active < self.configuration.bluetooth.maxConnections else { return false }
        let connected = Set(self.devices.filter { $0.deviceStatus == .connected }.map(\.serialNumber))
        return self.configuration.wristbands.contains { !connected.contains($0.serial) }
    }

    // MARK: Clock

    /// Whether the system clock is synchronised (a Pi without RTC is not until NTP has run; SPEC §8).
    var clockSynced: Bool { clinux_clock_synchronized() == 1 }

    var uptimeSeconds: Double {
        let nanoseconds = MonotonicInstant.now.nanoseconds &- self.started.nanoseconds
        return Double(nanoseconds) / 1e9
    }
}

/// A one-line agent error.
public struct AgentError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { self.message }
}
