import Config
import EmpaLink
import EventLoop
import MQTT
import Spool

/// The agent-level topics: status (with the Last Will), devices, metrics; batching cadence.
extension AgentRuntime {
    func mqttEvent(_ event: MQTTConnectionEvent) {
        switch event {
        case .connected:
            // The MQTT client logs connection changes itself (COMPONENT=mqtt).
            self.outbox.brokerConnected()
            self.publishStatus(online: true)
            self.lastDevicesSummary = ""
            self.publishDevices()
            for device in self.wristbandDevices where self.publishers[self.topicID(for: device)] != nil {
                self.publishDeviceStatus(device, force: true)
            }
            if self.configuration.control.mqttCommands {
                do {
                    try self.mqtt.subscribe(self.topicBase + "/cmd", qos: 1)
                } catch {
                    self.logger.error("cannot subscribe to commands: \(error.message)")
                }
            }
        case .disconnected:
            self.outbox.brokerDisconnected()
        }
        self.updateSystemdStatus()
    }

    /// `P/A/status`, retained; the Last Will says `offline` if we vanish.
    func publishStatus(online: Bool) {
        let text: String
        if online {
            text = Self.object([
                ("state", Self.quote("online")),
                ("version", Self.quote(Version.string)),
                ("mode", Self.quote(self.mode.rawValue)),
                ("clock_synced", self.clockSynced ? "true" : "false"),
            ])
        } else {
            text = Self.object([("state", Self.quote("offline"))])
        }
        self.outbox.publish(topic: self.topicBase + "/status", text: text, retain: true)
    }

    /// `P/A/devices`, retained: every wristband seen and whether the agent would connect it.
    func publishDevices() {
        guard !self.apis.isEmpty else { return }
        let members = self.wristbandDevices.map { device -> (String, String) in
            (self.topicID(for: device), Self.object([
                ("address", Self.quote(device.address.description)),
                ("name", Self.quote(device.name)),
                // The advertisement's RSSI; null while connected (bluetoothd does not refresh it over a link).
                ("rssi", Self.advertisedRSSI(device).map(String.init) ?? "null"),
                ("allowed", device.allowed && self.isWhitelisted(device) ? "true" : "false"),
            ] + Self.profileMembers(device)))
        }
        let text = Self.object(members)
        guard text != self.lastDevicesSummary else { return }
        self.lastDevicesSummary = text
        self.outbox.publish(topic: self.topicBase + "/devices", text: text, retain: true)
    }

    /// Flushes every batch each `batch_ms` (or `background_batch_ms`) while data flows; with 0, publishers flush
    /// per notification. The timer stops when a tick finds nothing to publish and restarts with the next sample,
    /// so an agent without streaming wristbands does not wake up for it.
    ///
    /// With a non-zero interval the notification sockets are not read as each notification arrives: every tick
    /// first drains them (SPEC §19), each notification keeping the time the kernel queued it, and when the timer
    /// stops the sockets are armed so that the next notification restarts it.
    func scheduleFlush() {
        if let timer = self.flushTimer { self.loop.cancel(timer) }
        self.flushTimer = nil
        self.mqtt.defersReads = false
        for api in self.apis { api.defersNotificationReads = self.batchMilliseconds > 0 }
        self.armFlush()
    }

    /// The longest a notification waits in its socket: a longer batch interval drains at this cadence and
    /// publishes at its own. A socketpair holds about 278 notifications of 20 bytes (``NotificationStream``); an E4
    /// characteristic sends at most 6 a second, so 5 s leaves a margin of nine.
    static let maximumReadDeferral = 5_000

    /// Called when a batch receives data, or a deferred notification socket has data waiting: starts the flush timer
    /// if it is not running.
    func armFlush() {
        guard self.flushTimer == nil else { return }
        let milliseconds = self.batchMilliseconds
        guard milliseconds > 0 else { return }
        let tick = min(milliseconds, Self.maximumReadDeferral)
        self.nextFlush = Self.flushDue(after: MonotonicInstant.now, milliseconds: milliseconds)
        let interval = Duration.milliseconds(tick)
        self.flushTimer = try? self.loop.scheduleTimer(after: interval, repeating: interval) { [unowned self] in
            self.flushTick()
        }
        self.mqtt.defersReads = self.defersBrokerReads
    }

    /// Whether the batch tick reads the broker's socket (its acknowledgements and commands, Docs/mqtt.md) instead
    /// of the loop waking up for them: while ticks run at an interval of at most ``maximumBrokerReadDeferral``,
    /// unless the spool replays — replay refills the in-flight window every 100 ms from the acknowledgements, so it
    /// keeps reading them as they arrive.
    var defersBrokerReads: Bool {
        self.flushTimer != nil && self.batchMilliseconds <= Self.maximumBrokerReadDeferral
            && self.outbox.replayTimer == nil
    }

    /// The longest a command or an acknowledgement waits for the tick: `background_batch_ms`' default. Longer
    /// intervals read the broker's socket on arrival (their acknowledgements wake the loop once a batch, at most
    /// every 2 s, and a command should not wait for a 5 s tick).
    static let maximumBrokerReadDeferral = 2_000

    /// When a flush is due after one at `now`: the batch interval less half a tick, so that the tick nearest to it
    /// publishes.
    static func flushDue(after now: MonotonicInstant, milliseconds: Int) -> MonotonicInstant {
        let ahead = milliseconds - min(milliseconds, Self.maximumReadDeferral) / 2
        return MonotonicInstant(nanoseconds: now.nanoseconds &+ UInt64(max(ahead, 0)) &* 1_000_000)
    }

    /// One firing of the batch timer: drains the notification sockets, reads what the broker sent since the last
    /// tick (acknowledgements of its publishes, commands), publishes every pending batch when the batch interval is
    /// up, and stops the timer when that found nothing at all — the broker's socket is then watched again.
    func flushTick() {
        var drained = 0
        for api in self.apis { drained += api.drainNotifications() }
        let milliseconds = self.batchMilliseconds
        // A tick shorter than the batch interval only drains until the interval is (within half a tick) up.
        var due = true
        if milliseconds > Self.maximumReadDeferral {
            let now = MonotonicInstant.now
            due = now >= self.nextFlush
            if due { self.nextFlush = Self.flushDue(after: now, milliseconds: milliseconds) }
        }
        self.mqtt.defersReads = self.defersBrokerReads
        var published = false
        self.mqtt.coalescingWrites {
            // First, so that acknowledged messages free their in-flight slots (and the spool replays) in this tick.
            self.mqtt.readDeferred()
            guard due else { return }
            for publisher in self.publishers.values where publisher.flushAll() { published = true }
        }
        guard due else { return }
        if !published && drained == 0, let timer = self.flushTimer {
            self.loop.cancel(timer)
            self.flushTimer = nil
            self.mqtt.defersReads = false
            for api in self.apis { api.armNotificationWakeups() }
        }
    }

    func scheduleMetrics() {
        if let timer = self.metricsTimer { self.loop.cancel(timer) }
        self.metricsTimer = nil
        let seconds = self.configuration.publish.metricsIntervalSeconds
        guard seconds > 0 else { return }
        self.metricsTimer = try? self.loop.scheduleTimer(after: .seconds(Int64(seconds)),
                                                        repeating: .seconds(Int64(seconds))) { [unowned self] in
            self.publishMetrics()
            self.publishDevices()
            self.reportMalformedBlueZ()
        }
    }

    /// One journal line per metrics interval, only when BlueZ (or whatever owns `org.bluez`) sent something without
    /// BlueZ's shape since the last one: how much of each kind, and the latest (SPEC §12: never trust a peer).
    func reportMalformedBlueZ() {
        guard !self.apis.isEmpty else { return }
        let counts = self.bluezCounts
        let latest = self.apis.lazy.compactMap(\.lastMalformed).first ?? "an identifier that does not parse"
        let now = (counts.identifiers, counts.signals, counts.replies)
        let last = self.reportedMalformed
        guard now != last else { return }
        self.reportedMalformed = now
        // A new bus connection starts from zero again.
        guard now.0 >= last.0, now.1 >= last.1, now.2 >= last.2 else { return }
        self.logger.warn("org.bluez sent what BlueZ does not: \(now.0 - last.0) malformed identifiers, "
                             + "\(now.1 - last.1) malformed signals, \(now.2 - last.2) malformed replies (latest: "
                             + "\(latest)); ignored",
                         ["COMPONENT": "bluez"])
    }

    /// What BlueZ sent without its shape, over every adapter's API. Each API has its own bus connection: signals
    /// (and the identifiers in them) and owner changes reach every one, so the largest count is the bus's; replies
    /// answer one connection's calls, so they add up.
    var bluezCounts: (identifiers: UInt64, signals: UInt64, replies: UInt64, ownerChanges: UInt64, abandoned: UInt64,
                      stale: UInt64) {
        var counts: (identifiers: UInt64, signals: UInt64, replies: UInt64, ownerChanges: UInt64, abandoned: UInt64,
                     stale: UInt64) = (0, 0, 0, 0, 0, 0)
        for api in self.apis {
            counts.identifiers = max(counts.identifiers, api.malformedIdentifiers)
            counts.signals = max(counts.signals, api.malformedSignals)
            counts.ownerChanges = max(counts.ownerChanges, api.ownerChanges)
            counts.replies &+= api.malformedReplies
            counts.abandoned &+= api.abandonedCalls
            counts.stale &+= api.staleReplies
        }
        return counts
    }

    /// `P/A/metrics`.
    func publishMetrics() {
        self.outbox.publish(topic: self.topicBase + "/metrics", text: self.metricsJSON(), retain: false)
    }

    func spoolMetricsJSON() -> String {
        guard let spool = self.outbox.spool else { return Self.object([("enabled", "false")]) }
        let metrics = spool.metrics
        return Self.object([
            ("enabled", "true"),
            ("mode", Self.quote(self.configuration.spool.mode.rawValue)),
            ("bytes", String(metrics.bytes)),
            ("records", String(metrics.records)),
            ("spooled", String(self.outbox.spooled)),
            ("replayed", String(self.outbox.replayed)),
            ("dropped", String(metrics.dropped)),
            ("dropped_by_reason", Self.object(SpoolDropReason.allCases.map { reason in
                (reason.description, String(metrics.dropped(reason)))
            })),
            ("oldest_t", metrics.oldestTimestamp.map { Self.number(Double($0) / 1e6, decimals: 3) } ?? "null"),
            ("recovery_lost_bytes", String(metrics.recoveryLostBytes)),
            ("write_errors", String(metrics.noSpaceErrors &+ metrics.ioErrors &+ metrics.otherWriteErrors)),
            ("last_write_error", metrics.lastWriteError.map(Self.quote) ?? "null"),
        ])
    }

    /// How a device's notification sockets were read: wake-ups against drains, and what the kernel did not stamp.
    static func readsJSON(_ reads: NotificationReadStatistics) -> String {
        Self.object([
            ("notifications", String(reads.notifications)),
            ("wakeups", String(reads.wakeups)),
            ("drains", String(reads.drains)),
            ("read_time_fallbacks", String(reads.readTimeFallbacks)),
            ("high_water", String(reads.highWaterDrains)),
            ("truncated", String(reads.truncated)),
            ("passed_fds", String(reads.passedDescriptors)),
            ("receive_calls", String(reads.receiveCalls)),
        ])
    }

    func metricsJSON() -> String {
        let multiAdapter = self.apis.count > 1
        let devices = self.wristbandDevices.filter { self.isWhitelisted($0) || $0.isConnectionWanted }
            .map { device -> (String, String) in
                let stats = device.statistics
                let adapter: [(String, String)] = multiAdapter ? [("adapter", Self.quote(device.adapter))] : []
                let members: [(String, String)] = [
                    ("status", Self.quote(device.deviceStatus.rawValue)),
                    ("rx_packets", String(stats.packets)),
                    ("lost", String(stats.lostPackets)),
                    ("duplicates", String(stats.duplicates)),
                    ("decode_errors", String(stats.decodeErrors)),
                    ("reconnects", String(device.counters.linkLosses)),
                    ("connect_failures", String(device.counters.connectFailures)),
                    ("clock_reanchors", String(device.clockReanchors)),
                    ("notify_acquired", String(device.counters.acquiredNotifications)),
                    ("notify_fallbacks", String(device.counters.startNotifyFallbacks)),
                    ("notify_reads", Self.readsJSON(device.notificationReads)),
                    ("rssi", Self.advertisedRSSI(device).map(String.init) ?? "null"),
                ]
                return (self.topicID(for: device), Self.object(members + adapter))
            }
        let bluez = self.bluezCounts
        let fleet = self.fleet.map { [("fleet", self.fleetMetricsJSON($0))] } ?? []
        return Self.object([
            ("uptime_s", Self.number(self.uptimeSeconds, decimals: 1)),
            ("mode", Self.quote(self.mode.rawValue)),
            ("clock_synced", self.clockSynced ? "true" : "false"),
            ("bluetooth", Self.quote(self.bluetoothStatus.rawValue)),
            ("watchdog", Self.object(EmpaticaAPI.WatchdogAction.allCases.map { action in
                (action.rawValue, String(self.apis.reduce(0) { $0 &+ ($1.watchdogCounts[action] ?? 0) }))
            })),
            ("devices", Self.object(devices)),
            ("mqtt", Self.object([
                ("state", Self.quote("\(self.mqtt.state)")),
                ("published", String(self.outbox.published)),
                ("acked", String(self.outbox.acknowledged)),
                ("inflight", String(self.mqtt.inflightCount)),
                ("dropped", String(self.outbox.dropped)),
                ("oversized", String(self.outbox.oversized)),
                ("control_dropped", String(self.outbox.control.dropped)),
                ("control_waiting", String(self.outbox.control.count)),
            ])),
            ("spool", self.spoolMetricsJSON()),
            ("control", self.controlMetricsJSON()),
            ("bluez", Self.object([
                ("malformed_identifiers", String(bluez.identifiers)),
                ("malformed_signals", String(bluez.signals)),
                ("malformed_replies", String(bluez.replies)),
                ("owner_changes", String(bluez.ownerChanges)),
                ("abandoned_calls", String(bluez.abandoned)),
                ("stale_replies", String(bluez.stale)),
            ])),
        ] + fleet)
    }

    /// The metrics' `control`: what the command topic and the control socket received and refused.
    func controlMetricsJSON() -> String {
        let socket = self.control?.counters ?? ControlServer.Counters()
        return Self.object([
            ("mqtt_commands", String(self.controlCounters.mqttCommands)),
            ("mqtt_rejected", String(self.controlCounters.mqttRejected)),
            ("socket_requests", String(socket.requests)),
            ("socket_rejected", String(self.controlCounters.socketRejected)),
            ("socket_busy", String(socket.busy)),
            ("socket_overlong", String(socket.overlong)),
            ("socket_timeouts", String(socket.timeouts)),
            ("socket_abandoned", String(socket.abandoned)),
        ])
    }
}
