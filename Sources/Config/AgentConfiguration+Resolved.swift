/// Building the typed configuration from the validator's resolved values.
extension AgentConfiguration {
    init(resolved values: [String: TOMLValue], wristbands: [ConfigValidator.State.Wristband]) {
        let table = Resolved(values: values)
        self.agent = Agent(
            id: table.string("agent.id"),
            logLevel: LogLevel(rawValue: table.string("agent.log_level")) ?? .info,
            controlSocket: table.string("agent.control_socket"))
        self.auth = Auth(
            apiKey: table.optionalString("auth.api_key"),
            apiKeyFile: table.optionalString("auth.api_key_file"),
            keyring: table.string("auth.keyring"))
        self.bluetooth = Bluetooth(
            adapters: table.stringOrStrings("bluetooth.adapter"),
            mode: PowerMode(rawValue: table.string("bluetooth.mode")) ?? .active,
            rssiMin: table.int("bluetooth.rssi_min"),
            maxConnections: table.int("bluetooth.max_connections"),
            connectTimeoutSeconds: table.int("bluetooth.connect_timeout_s"),
            reconnectInitialSeconds: table.int("bluetooth.reconnect_initial_s"),
            reconnectMaxSeconds: table.int("bluetooth.reconnect_max_s"),
            backgroundScanWindowSeconds: table.int("bluetooth.background_scan_window_s"),
            backgroundScanIntervalSeconds: table.int("bluetooth.background_scan_interval_s"),
            watchdogSeconds: table.int("bluetooth.watchdog_s"))
        self.wristbands = wristbands.map { band in
            let entry = Resolved(values: band.values)
            return Wristband(
                serial: entry.string("wristband.serial"),
                address: entry.optionalString("wristband.address"),
                label: entry.string("wristband.label"),
                profile: entry.optionalString("wristband.profile"),
                id: entry.optionalString("wristband.id"))
        }
        self.mqtt = MQTT(
            host: table.string("mqtt.host"),
            port: table.int("mqtt.port"),
            clientID: table.string("mqtt.client_id"),
            username: table.optionalString("mqtt.username"),
            passwordFile: table.optionalString("mqtt.password_file"),
            protocolVersion: MQTTProtocol(rawValue: table.string("mqtt.protocol")) ?? .v5,
            keepaliveSeconds: table.int("mqtt.keepalive_s"),
            reconnectMaximumSeconds: table.int("mqtt.reconnect_max_s"),
            qos: table.int("mqtt.qos"),
            topicPrefix: table.string("mqtt.topic_prefix"),
            maxInflight: table.int("mqtt.max_inflight"),
            tls: TLS(
                caFile: table.optionalString("mqtt.tls.ca_file"),
                caPath: table.optionalString("mqtt.tls.ca_path"),
                certFile: table.optionalString("mqtt.tls.cert_file"),
                keyFile: table.optionalString("mqtt.tls.key_file"),
                insecure: table.bool("mqtt.tls.insecure")))
        self.publish = Publish(
            streams: table.strings("publish.streams"),
            bvp: BVPSignal(rawValue: table.string("publish.bvp")) ?? .filtered,
            batchMilliseconds: table.int("publish.batch_ms"),
            backgroundBatchMilliseconds: table.int("publish.background_batch_ms"),
            metricsIntervalSeconds: table.int("publish.metrics_interval_s"))
        self.spool = Spool(
            directory: table.string("spool.dir"),
            mode: SpoolMode(rawValue: table.string("spool.mode")) ?? .offline,
            maxBytes: table.int64("spool.max_bytes"),
            segmentBytes: table.int64("spool.segment_bytes"),
            fsyncIntervalMilliseconds: table.int("spool.fsync_interval_ms"),
            onFull: SpoolFullPolicy(rawValue: table.string("spool.on_full")) ?? .dropOldest,
            replayRate: table.int("spool.replay_rate"))
        self.control = Control(mqttCommands: table.bool("control.mqtt_commands"))
        self.fleet = Fleet(enabled: table.bool("fleet.enabled"))
        self.resolved = values.mapValues(\.kind)
        self.positions = values.compactMapValues { $0.position.line > 0 ? $0.position : nil }
    }

    /// Typed reads of validated values. The validator has checked every type, so the fallbacks are unreachable;
    /// they exist so that no input can make this code trap.
    struct Resolved {
        let values: [String: TOMLValue]

        func optionalString(_ path: String) -> String? {
            guard case .string(let text)? = self.values[path]?.kind else { return nil }
            return text
        }

        func string(_ path: String) -> String { self.optionalString(path) ?? "" }

        func int64(_ path: String) -> Int64 {
            guard case .integer(let number)? = self.values[path]?.kind else { return 0 }
            return number
        }

        func int(_ path: String) -> Int { Int(truncatingIfNeeded: self.int64(path)) }

        func bool(_ path: String) -> Bool {
            guard case .boolean(let flag)? = self.values[path]?.kind else { return false }
            return flag
        }

        /// A string as a list of one, or an array of strings.
        func stringOrStrings(_ path: String) -> [String] {
            if case .string(let text)? = self.values[path]?.kind { return [text] }
            return self.strings(path)
        }

        func strings(_ path: String) -> [String] {
            guard case .array(let items)? = self.values[path]?.kind else { return [] }
            return items.compactMap { item in
                guard case .string(let text) = item.kind else { return nil }
                return text
            }
        }
    }
}
