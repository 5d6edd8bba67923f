import Config
import EmpaLink
import EventLoop
import Fleet
import Logging
import MQTT
import Posix

/// Fleet mode (SPEC §18): the ``FleetCoordinator`` fed from the agent's loop, its actions executed here.
/// Docs/fleet.md, "In the agent", describes the wiring; with `fleet.enabled = false` none of this runs.
extension AgentRuntime {
    /// The coordinator's tick.
    static let fleetTickPeriod: Duration = .milliseconds(250)
    /// Sightings are fed once a second (every fourth tick).
    static let fleetSightingTicks: UInt64 = 4
    /// A wristband counts as heard while BlueZ announced its RSSI this recently: bluetoothd announces changes of
    /// 8 dBm or more and re-announces every value at each LE scan restart (~10 s), so a wristband still
    /// advertising is re-announced within that; one that fell silent keeps its last `RSSI` but is not.
    static let fleetHeardWindow: Duration = .seconds(12)
    /// The fleet connection retries the broker at least this often, whatever `mqtt.reconnect_max_s` says: after a
    /// broker restart every holder must re-assert its leases well inside the others' grace
    /// (``FleetPolicy/grace``, 10 s); with the agent's 60 s default a holder could come back after it. With equal
    /// jitter the attempts are 1.5-3 s apart, so a holder is back within 3 s of the broker (plus CONNACK and SUBACK).
    static let fleetReconnectMaximum: Duration = .seconds(3)

    /// The fleet link for `configuration`, or `nil` when fleet mode is off.
    ///
    /// - Throws: a one-line ``AgentError`` for a board id that cannot be one (the validator refuses it first) or
    ///   MQTT options the client refuses.
    static func makeFleet(_ configuration: AgentConfiguration, loop: EventLoop,
                          logger: Logger) throws(AgentError) -> FleetLink? {
        guard configuration.fleet.enabled else { return nil }
        let board = configuration.agent.id
        guard FleetProtocol.isIdentifier(board), board != "fleet" else {
            throw AgentError("fleet: agent.id \"\(board)\" cannot be a board id (1-64 of A-Z a-z 0-9 . _ -, not "
                                 + "\"fleet\")")
        }
        let incarnation = UInt64(max(Self.wallClock(), 0) * 1000)
        let coordinator = FleetCoordinator(
            board: board, prefix: configuration.mqtt.topicPrefix,
            wristbands: configuration.wristbands.map(\.serial),
            adapters: configuration.bluetooth.adapters.map {
                .init(name: $0, capacity: configuration.bluetooth.maxConnections)
            },
            incarnation: incarnation)
        do {
            var options = try MQTTClient.Options(configuration.mqtt, agentID: board)
            options.clientID += "-fleet"
            // Message expiry (sightings) and per-connection wills need MQTT 5.
            options.protocolVersion = .v5
            options.reconnectMaximum = min(options.reconnectMaximum, Self.fleetReconnectMaximum)
            options.reconnectInitial = min(options.reconnectInitial, options.reconnectMaximum)
            let will = coordinator.will
            options.will = MQTTClient.Will(topic: will.topic, payload: will.payload, qos: 1, retain: true)
            // Its connection lines say which connection they are about.
            let client = try MQTTClient(options: options, eventLoop: loop, logger: logger.with("CONNECTION", "fleet"))
            return FleetLink(coordinator: coordinator, mqtt: client)
        } catch {
            throw AgentError("fleet: \(error.message)")
        }
    }

    /// Starts the fleet connection and the tick.
    func startFleet() throws(AgentError) {
        guard let fleet = self.fleet else { return }
        fleet.mqtt.onConnectionEvent = { [unowned self] event in self.fleetConnectionEvent(event) }
        fleet.mqtt.onMessage = { [unowned self] message in
            self.fleetHandle(.message(topic: message.topic, payload: Array(message.payload)))
        }
        do {
            try fleet.mqtt.start()
        } catch {
            throw AgentError("fleet: \(error.message)")
        }
        do throws(Errno) {
            fleet.timer = try self.loop.scheduleTimer(after: Self.fleetTickPeriod, repeating: Self.fleetTickPeriod) {
                [unowned self] in self.fleetTick()
            }
        } catch {
            throw AgentError("fleet: cannot schedule the tick: \(error)")
        }
        let adapters = fleet.coordinator.adapters.map { "\($0.name) (\($0.capacity) slots)" }
        self.logger.info("fleet mode: board \(self.configuration.agent.id), \(adapters.joined(separator: ", "))",
                         ["COMPONENT": "fleet"])
    }

    /// The loop's monotonic clock in seconds: the coordinator's `now`.
    static var fleetNow: Double { Double(MonotonicInstant.now.nanoseconds) / 1e9 }

    /// Hands one event to the coordinator and executes its actions; events raised meanwhile are handled after.
    func fleetHandle(_ event: FleetCoordinator.Event) {
        guard let fleet = self.fleet, !fleet.stopped else { return }
        fleet.queue.append(event)
        guard !fleet.handling else { return }
        fleet.handling = true
        defer { fleet.handling = false }
        while !fleet.queue.isEmpty {
            let next = fleet.queue.removeFirst()
            let actions = fleet.coordinator.handle(next, now: Self.fleetNow)
            for action in actions { self.fleetPerform(action, fleet) }
        }
    }

    func fleetPerform(_ action: FleetCoordinator.Action, _ fleet: FleetLink, publishing: Bool = true) {
        switch action {
        case .publish(let topic, let payload, let retain, let expiry):
            guard publishing else { return }
            self.fleetPublish(fleet, topic: topic, payload: payload, retain: retain, expiry: expiry)
        case .clearRetained(let topic):
            guard publishing else { return }
            self.fleetPublish(fleet, topic: topic, payload: [], retain: true, expiry: nil)
        case .connect(let serial, let adapter):
            self.fleetConnect(serial, adapter: adapter, fleet)
        case .disconnect(let serial, let reason):
            guard let device = self.fleetDevice(serial) else { return }
            self.logger.info("fleet: disconnecting \(serial) (\(reason.rawValue))",
                             ["DEVICE": serial, "COMPONENT": "fleet"])
            device.disconnect()
        case .log(let line):
            if line.hasPrefix("fleet: dropped") {
                guard let skipped = fleet.dropLog.admit() else { return }
                let more = skipped > 0 ? " (\(skipped) more not logged)" : ""
                self.logger.warn(line + more, ["COMPONENT": "fleet"])
            } else {
                self.logger.info(line, ["COMPONENT": "fleet"])
            }
        case .count(let counter):
            fleet.counters[counter, default: 0] &+= 1
        }
    }

    func fleetPublish(_ fleet: FleetLink, topic: String, payload: [UInt8], retain: Bool, expiry: UInt32?) {
        do {
            try fleet.mqtt.publish(topic: topic, payload: payload, qos: 1, retain: retain,
                                   messageExpirySeconds: expiry)
        } catch {
            fleet.publishFailures &+= 1
            guard let skipped = fleet.publishLog.admit() else { return }
            let more = skipped > 0 ? " (\(skipped) more not logged)" : ""
            self.logger.warn("fleet: cannot publish \(topic): \(error.message)\(more)", ["COMPONENT": "fleet"])
        }
    }

    /// The whitelisted wristband the coordinator calls `serial` as `adapter` knows it, or (no adapter) the one of its
    /// objects that is wanted or linked, if BlueZ knows it.
    func fleetDevice(_ serial: String, adapter: String? = nil) -> EmpaticaDeviceManager? {
        let objects = self.devices.filter { self.wristband(for: $0)?.serial == serial }
        if let adapter { return objects.first { $0.adapter == adapter } }
        return objects.first { $0.isConnectionWanted || $0.deviceStatus != .disconnected } ?? objects.first
    }

    /// The coordinator's `.connect`: whitelist and API key rules still apply; an attempt that cannot start is a
    /// failed attempt (the coordinator retries with its backoff).
    func fleetConnect(_ serial: String, adapter: String, _ fleet: FleetLink) {
        guard !self.shuttingDown, let device = self.fleetDevice(serial, adapter: adapter), device.allowed else {
            fleet.queue.append(.connectFailed(serial: serial, adapter: adapter))
            return
        }
        // Reported before the call: a status the call reports at once (an attempt refused at once) must find it.
        if fleet.reported[serial] == nil { fleet.reported[serial] = .connecting(adapter: adapter) }
        guard !device.isConnectionWanted else { return }  // already on its way: its status changes will tell
        do {
            try device.connect(delegate: self.publisher(for: device),
                               options: EmpaticaDeviceManager.ConnectOptions(autoReconnect: false))
            self.logger.info("connecting \(serial) (fleet lease held)", ["DEVICE": serial, "COMPONENT": "fleet"])
        } catch {
            self.logger.error("\(serial): \(error)", ["DEVICE": serial])
            if case .connecting? = fleet.reported[serial] { fleet.reported[serial] = nil }
            fleet.queue.append(.connectFailed(serial: serial, adapter: adapter))
        }
    }

    /// A wristband's status changed: the coordinator learns of links that came up, went down, or never came up.
    func fleetDeviceStatusChanged(_ device: EmpaticaDeviceManager) {
        guard let fleet = self.fleet, let serial = self.wristband(for: device)?.serial else { return }
        // Only the object of the adapter the attempt went to speaks for the link.
        switch fleet.reported[serial] {
        case .connecting(let adapter)?, .up(let adapter)?: guard device.adapter == adapter else { return }
        case nil: break
        }
        switch device.deviceStatus {
        case .connected:
            if case .up = fleet.reported[serial] { return }
            fleet.reported[serial] = .up(adapter: device.adapter)
            self.fleetHandle(.connected(serial: serial, adapter: device.adapter))
        case .disconnected:
            switch fleet.reported.removeValue(forKey: serial) {
            case .up(let adapter)?: self.fleetHandle(.disconnected(serial: serial, adapter: adapter))
            case .connecting(let adapter)?: self.fleetHandle(.connectFailed(serial: serial, adapter: adapter))
            case nil: break
            }
        case .connecting, .disconnecting:
            break
        }
    }

    /// An adapter came or went (absent, powered off, BlueZ gone: `notAvailable`): the coordinator counts slots only
    /// on usable adapters, so it neither sends attempts to one that cannot take them nor publishes its slots.
    func fleetAdaptersChanged() {
        guard let fleet = self.fleet, !fleet.stopped else { return }
        let capacity = self.configuration.bluetooth.maxConnections
        let adapters = self.configuration.bluetooth.adapters.map { name in
            let usable = self.apis.first { $0.options.adapter == name }.map { $0.status != .notAvailable } ?? false
            return FleetCoordinator.AdapterCapacity(name: name, capacity: usable ? capacity : 0)
        }
        guard adapters != fleet.coordinator.adapters else { return }
        let usable = adapters.filter { $0.capacity > 0 }.map(\.name)
        self.logger.info("fleet: usable adapters \(usable.isEmpty ? "none" : usable.joined(separator: ", "))",
                         ["COMPONENT": "fleet"])
        self.fleetHandle(.adaptersChanged(adapters))
    }

    /// The system bus is gone with every link's manager: the coordinator learns that those links ended (a new
    /// `EmpaticaAPI` starts from disconnected devices).
    func fleetLinksLost() {
        guard let fleet = self.fleet else { return }
        let lost = fleet.reported.sorted { $0.key < $1.key }
        fleet.reported.removeAll()
        for (serial, report) in lost {
            switch report {
            case .up(let adapter): self.fleetHandle(.disconnected(serial: serial, adapter: adapter))
            case .connecting(let adapter): self.fleetHandle(.connectFailed(serial: serial, adapter: adapter))
            }
        }
    }

    /// Every 250 ms: once a second the wristbands heard, then the coordinator's timers.
    func fleetTick() {
        guard let fleet = self.fleet, !self.shuttingDown else { return }
        fleet.ticks &+= 1
        if fleet.ticks % Self.fleetSightingTicks == 0 { self.fleetSightings() }
        self.fleetHandle(.tick)
    }

    /// Feeds `.localSighting` for each whitelisted, unlocked wristband heard lately (see ``fleetHeardWindow``)
    /// that no one is connected to: a connected E4 does not advertise, and BlueZ's `RSSI` of a device with a link
    /// is stale.
    func fleetSightings() {
        guard self.fleet != nil, !self.apis.isEmpty else { return }
        let now = MonotonicInstant.now
        let devices = self.devices
        // A wristband one of our adapters is connecting or connected is ours: the others' objects are stale.
        let ours = Set(devices.filter { $0.isConnectionWanted || $0.isLinkUp }.map(\.serialNumber))
        for device in devices where !ours.contains(device.serialNumber) {
            guard let band = self.wristband(for: device), device.allowed, device.deviceStatus == .disconnected,
                  !device.isConnectionWanted, !device.isLinkUp, let rssi = device.rssi,
                  let announced = device.rssiAnnouncedAt, announced <= now,
                  announced.duration(to: now) <= Self.fleetHeardWindow
            else { continue }
            self.fleetHandle(.localSighting(serial: band.serial, rssi: Double(rssi), adapter: device.adapter))
        }
    }

    func fleetConnectionEvent(_ event: MQTTConnectionEvent) {
        guard let fleet = self.fleet else { return }
        switch event {
        case .connected:
            fleet.connectionNumber &+= 1
            fleet.connectionUp = true
            fleet.sessionUp = false
            let number = fleet.connectionNumber
            let filter = FleetTopic.subscription(prefix: self.configuration.mqtt.topicPrefix)
            do {
                try fleet.mqtt.subscribeOnCurrentConnection(filter, qos: 1) { [unowned self] granted in
                    guard let fleet = self.fleet, fleet.connectionNumber == number, fleet.connectionUp,
                          !fleet.sessionUp else { return }
                    guard granted < 0x80 else {
                        self.logger.error("fleet: the broker refused the subscription to \(filter) (reason "
                                              + "\(granted)); this board stays out of the fleet until it reconnects",
                                          ["COMPONENT": "fleet"])
                        return
                    }
                    fleet.sessionUp = true
                    self.fleetHandle(.brokerConnected)
                }
            } catch {
                self.logger.error("fleet: cannot subscribe to \(filter): \(error.message)", ["COMPONENT": "fleet"])
            }
        case .disconnected:
            if fleet.sessionUp {
                self.fleetHandle(.brokerDisconnected)
            } else if fleet.connectionUp {
                // The broker accepted this connection, with its will, but the subscription never came: that
                // session is spent (its will may already say offline), so the coordinator moves past it too. Its
                // publications would go nowhere.
                let now = Self.fleetNow
                for action in fleet.coordinator.handle(.brokerConnected, now: now)
                    + fleet.coordinator.handle(.brokerDisconnected, now: now) {
                    self.fleetPerform(action, fleet, publishing: false)
                }
                if !fleet.queue.isEmpty { self.fleetHandle(fleet.queue.removeFirst()) }
            }
            fleet.connectionUp = false
            fleet.sessionUp = false
            guard !self.shuttingDown else { return }
            // The next connection's will carries the next session.
            do {
                try fleet.mqtt.setWill(fleet.will)
            } catch {
                self.logger.error("fleet: cannot register the presence will: \(error.message)", ["COMPONENT": "fleet"])
            }
        }
    }

    /// SIGTERM: releases and the offline presence go out on the fleet connection (``leave()`` disconnects it).
    func shutdownFleet() {
        guard let fleet = self.fleet else { return }
        if let timer = fleet.timer {
            self.loop.cancel(timer)
            fleet.timer = nil
        }
        self.fleetHandle(.shutdown)
        fleet.stopped = true
    }

    /// The metrics' `fleet` (present only in fleet mode).
    func fleetMetricsJSON(_ fleet: FleetLink) -> String {
        let serials = self.configuration.wristbands.map(\.serial)
        let holding = serials.filter {
            if case .holding? = fleet.coordinator.role(of: $0) { return true }
            return false
        }
        return Self.object([
            ("board", Self.quote(fleet.coordinator.board)),
            ("mqtt", Self.quote("\(fleet.mqtt.state)")),
            ("session", String(fleet.coordinator.session)),
            ("holding", "[" + holding.sorted().map(Self.quote).joined(separator: ",") + "]"),
            ("publish_failures", String(fleet.publishFailures)),
            ("counters", Self.object(FleetCoordinator.Counter.allCases.map { counter in
                (counter.rawValue, String(fleet.counters[counter] ?? 0))
            })),
        ])
    }
}
