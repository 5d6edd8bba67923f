import Config
/// Commands from the control socket and, when enabled, from MQTT (`P/A/cmd`).
extension AgentRuntime {
    /// A control-socket request line: `status`, `mode background`, `mode resume`, `rescan`.
    ///
    /// - Returns: one JSON line.
    func controlCommand(_ line: String) -> String {
        let words = line.split(separator: " ").map(String.init)
        switch words {
        case ["status"]:
            return self.statusJSON()
        case ["mode", "background"]:
            return Self.object([("ok", "true"), ("result", Self.quote(self.setMode(.background, reason: "control socket")))])
        case ["mode", "resume"], ["mode", "active"]:
            return Self.object([("ok", "true"), ("result", Self.quote(self.setMode(.active, reason: "control socket")))])
        case ["rescan"]:
            self.logRescan(from: "control socket")
            for api in self.apis { api.reconcileDiscovery() }
            return Self.object([("ok", "true"), ("result", Self.quote("rescan requested"))])
        default:
            self.controlCounters.socketRejected &+= 1
            self.logRejected("control command", Self.excerpt(line), reason: "unknown command")
            return Self.object([("ok", "false"),
                                ("error", Self.quote("unknown command; expected status, mode background|resume, rescan"))])
        }
    }

    /// The live state for `empalinkctl status`.
    func statusJSON() -> String {
        let devices = self.wristbandDevices.map { device -> (String, String) in
            (self.topicID(for: device), Self.object([
                ("address", Self.quote(device.address.description)),
                ("status", Self.quote(device.deviceStatus.rawValue)),
                ("whitelisted", self.isWhitelisted(device) ? "true" : "false"),
                // As on P/A/devices: the key unlocks it and it is whitelisted.
                ("allowed", device.allowed && self.isWhitelisted(device) ? "true" : "false"),
                // bluetoothd does not refresh RSSI over a link: null while connected, as P/A/S/status says.
                ("rssi", Self.advertisedRSSI(device).map(String.init) ?? "null"),
                ("battery", device.batteryLevel.map { Self.number(Double($0), decimals: 2) } ?? "null"),
                ("label", Self.quote(self.wristband(for: device)?.label ?? "")),
                ("last_error", device.lastError.map { Self.quote($0.description) } ?? "null"),
            ] + Self.profileMembers(device)))
        }
        return Self.object([
            ("agent", Self.quote(self.configuration.agent.id)),
            ("version", Self.quote(Version.string)),
            ("mode", Self.quote(self.mode.rawValue)),
            ("bluetooth", Self.quote(self.bluetoothStatus.rawValue)),
            ("mqtt", Self.quote("\(self.mqtt.state)")),
            ("clock_synced", self.clockSynced ? "true" : "false"),
            ("uptime_s", Self.number(self.uptimeSeconds, decimals: 1)),
            ("devices", Self.object(devices)),
            ("metrics", self.metricsJSON()),
        ])
    }

    /// An MQTT command on `P/A/cmd`: `{"mode":"background"|"resume"}` or `{"rescan":true}`. The result or error goes
    /// to `P/A/cmd/result`; anything malformed is answered with an error and changes nothing.
    ///
    /// A retained command is not acted on: the broker would deliver it again at every (re)connect, so a
    /// `mosquitto_pub -r` would switch the mode back after every restart. It is answered with an error that says
    /// so. An empty message is how a retained message is cleared (`mosquitto_pub -r -n`); it is no command and
    /// gets no answer.
    ///
    /// - Parameters:
    ///   - retained: whether the broker delivered the message from its retained store.
    func command(topic: String, payload: [UInt8], retained: Bool = false) {
        guard topic == self.topicBase + "/cmd", self.configuration.control.mqttCommands else { return }
        self.controlCounters.mqttCommands &+= 1
        if payload.isEmpty {
            self.logger.info("ignored an empty message on \(topic) (a retained command being cleared)")
            return
        }
        let reply: String
        if retained {
            let error = "retained command ignored: commands act only when sent live; clear it with "
                + "mosquitto_pub -r -n -t \(topic)"
            self.controlCounters.mqttRejected &+= 1
            self.logRejected("retained MQTT command", Self.excerpt(payload), reason: error)
            reply = Self.object([("ok", "false"), ("error", Self.quote(error))])
            self.outbox.publish(topic: self.topicBase + "/cmd/result", text: reply, retain: false)
            return
        }
        switch FlatJSON.parse(payload) {
        case .failure(let error):
            self.controlCounters.mqttRejected &+= 1
            self.logRejected("MQTT command", Self.excerpt(payload), reason: "malformed: \(error.message)")
            reply = Self.object([("ok", "false"), ("error", Self.quote("malformed command: \(error.message)"))])
        case .success(let members):
            if members.count == 1, case .string(let mode)? = members["mode"], mode == "background" || mode == "resume" {
                let result = self.setMode(mode == "background" ? .background : .active, reason: "MQTT command")
                reply = Self.object([("ok", "true"), ("command", Self.object([("mode", Self.quote(mode))])),
                                     ("result", Self.quote(result))])
            } else if members.count == 1, case .bool(true)? = members["rescan"] {
                self.logRescan(from: "MQTT command")
                for api in self.apis { api.reconcileDiscovery() }
                reply = Self.object([("ok", "true"), ("command", Self.object([("rescan", "true")])),
                                     ("result", Self.quote("rescan requested"))])
            } else {
                self.controlCounters.mqttRejected &+= 1
                self.logRejected("MQTT command", Self.excerpt(payload), reason: "unknown command")
                reply = Self.object([("ok", "false"), ("error", Self.quote(
                    "unknown command; expected {\"mode\":\"background\"|\"resume\"} or {\"rescan\":true}"))])
            }
        }
        self.outbox.publish(topic: self.topicBase + "/cmd/result", text: reply, retain: false)
    }

    // MARK: Journal

    /// Logs a refused command at warning, at most ``commandLogBurst`` a minute (a flood must not fill the journal).
    func logRejected(_ kind: String, _ excerpt: String, reason: String) {
        guard let skipped = self.rejectedCommandLog.admit() else { return }
        let more = skipped > 0 ? " (\(skipped) more rejected commands not logged)" : ""
        self.logger.warn("rejected \(kind) \(excerpt): \(reason)\(more)", ["COMMAND": kind])
    }

    /// Logs a rescan request at info, rate-limited like ``logRejected(_:_:reason:)``.
    func logRescan(from source: String) {
        guard let skipped = self.rescanLog.admit() else { return }
        let more = skipped > 0 ? " (\(skipped) more rescans not logged)" : ""
        self.logger.info("rescan requested (\(source))\(more)", ["COMMAND": "rescan"])
    }

    /// How many command lines of each kind reach the journal per minute.
    static let commandLogBurst = 10

    /// A payload as the journal shows it: JSON-quoted, at most 80 characters of it, invalid UTF-8 replaced.
    static func excerpt(_ payload: [UInt8]) -> String {
        self.excerpt(String(decoding: payload.prefix(320), as: UTF8.self), total: payload.count)
    }

    static func excerpt(_ text: String, total: Int? = nil) -> String {
        let scalars = text.unicodeScalars
        let total = total ?? text.utf8.count
        guard scalars.count > 80 || total > text.utf8.count else { return Self.quote(text) }
        return Self.quote(String(String.UnicodeScalarView(scalars.prefix(77))) + "…") + " (\(total) bytes)"
    }
}
