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
            self.api?.reconcileDiscovery()
            return Self.object([("ok", "true"), ("result", Self.quote("rescan requested"))])
        default:
            return Self.object([("ok", "false"),
                                ("error", Self.quote("unknown command; expected status, mode background|resume, rescan"))])
        }
    }

    /// The live state for `empalinkctl status`.
    func statusJSON() -> String {
        let devices = (self.api?.devices ?? []).map { device -> (String, String) in
            (device.serialNumber, Self.object([
                ("address", Self.quote(device.address.description)),
                ("status", Self.quote(device.deviceStatus.rawValue)),
                ("whitelisted", self.isWhitelisted(device) ? "true" : "false"),
                ("allowed", device.allowed ? "true" : "false"),
                ("rssi", device.rssi.map(String.init) ?? "null"),
                ("battery", device.batteryLevel.map { Self.number(Double($0), decimals: 2) } ?? "null"),
                ("label", Self.quote(self.wristband(for: device)?.label ?? "")),
                ("last_error", device.lastError.map { Self.quote($0.description) } ?? "null"),
            ]))
        }
        return Self.object([
            ("agent", Self.quote(self.configuration.agent.id)),
            ("version", Self.quote(Version.string)),
            ("mode", Self.quote(self.mode.rawValue)),
            ("bluetooth", Self.quote(self.api?.status.rawValue ?? "notAvailable")),
            ("mqtt", Self.quote("\(self.mqtt.state)")),
            ("clock_synced", self.clockSynced ? "true" : "false"),
            ("uptime_s", Self.number(self.uptimeSeconds, decimals: 1)),
            ("devices", Self.object(devices)),
            ("metrics", self.metricsJSON()),
        ])
    }

    /// An MQTT command on `P/A/cmd`: `{"mode":"background"|"resume"}` or `{"rescan":true}`. The result or error goes
    /// to `P/A/cmd/result`; anything malformed is answered with an error and changes nothing.
    func command(topic: String, payload: [UInt8]) {
        guard topic == self.topicBase + "/cmd", self.configuration.control.mqttCommands else { return }
        let reply: String
        switch FlatJSON.parse(payload) {
        case .failure(let error):
            reply = Self.object([("ok", "false"), ("error", Self.quote("malformed command: \(error.message)"))])
        case .success(let members):
            if members.count == 1, case .string(let mode)? = members["mode"], mode == "background" || mode == "resume" {
                let result = self.setMode(mode == "background" ? .background : .active, reason: "MQTT command")
                reply = Self.object([("ok", "true"), ("command", Self.object([("mode", Self.quote(mode))])),
                                     ("result", Self.quote(result))])
            } else if members.count == 1, case .bool(true)? = members["rescan"] {
                self.api?.reconcileDiscovery()
                reply = Self.object([("ok", "true"), ("command", Self.object([("rescan", "true")])),
                                     ("result", Self.quote("rescan requested"))])
            } else {
                reply = Self.object([("ok", "false"), ("error", Self.quote(
                    "unknown command; expected {\"mode\":\"background\"|\"resume\"} or {\"rescan\":true}"))])
            }
        }
        self.outbox.publish(topic: self.topicBase + "/cmd/result", text: reply, retain: false)
    }
}
