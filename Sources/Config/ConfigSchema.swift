/// The agent configuration's keys (SPEC §4): what the validator enforces and Docs/configuration.md documents.
public enum ConfigSchema {
    /// The sections, in document order. `wristband` is an array of tables; the others are tables.
    public static let sections: [(name: String, summary: String)] = [
        ("agent", "Identity, logging and the local control socket."),
        ("auth", "The API key that unlocks wristbands, checked offline against a keyring."),
        ("bluetooth", "The BlueZ adapter, discovery, connections and power modes."),
        ("wristband", "The whitelist: one `[[wristband]]` table per device. Only these are ever connected."),
        ("mqtt", "The broker connection. TLS is used when any `tls.*` file is set."),
        ("publish", "Which streams are published and how they are batched."),
        ("spool", "The crash-safe disk spool that holds data while the broker is away."),
        ("control", "Remote control surfaces."),
        ("fleet", "Several boards sharing one ward through the broker (SPEC §18, Docs/fleet.md). Off by default."),
    ]

    /// The MQTT streams a device can publish.
    public static let streams = ["bvp", "gsr", "acc", "temp", "ibi", "hr", "battery", "tag", "contact"]

    /// Every key, grouped by section in document order.
    public static let keys: [ConfigKey] = [
        ConfigKey("agent.id", .identifier, default: .derived("the host name"),
                  "Names this agent in MQTT topics (`P/<id>/…`) and the default client id."),
        ConfigKey("agent.log_level", .oneOf(["error", "warn", "info", "debug"]), default: .value(.string("info")),
                  "Least severe level logged (to journald under systemd, stderr otherwise)."),
        ConfigKey("agent.control_socket", .path(maxBytes: 107),
                  default: .value(.string("/run/empalink/control.sock")),
                  "Unix socket for `empalinkctl status` and `empalinkctl mode`."),

        ConfigKey("auth.api_key", .string(1...256), default: .unset("unset: no wristband is connected"),
                  "The API key, checked against the keyring by SHA-256. Prefer `api_key_file`; set at most one."),
        ConfigKey("auth.api_key_file", .path(maxBytes: nil), default: .unset("unset"),
                  "A file whose first line is the API key, so the secret stays out of this file. Read at start "
                      + "and on every reload (SIGHUP); unreadable or empty is a configuration error."),
        ConfigKey("auth.keyring", .path(maxBytes: nil), default: .value(.string("/etc/empalink/keyring.toml")),
                  "Keyring of hashed API keys (`empalinkctl key add` writes it). Read at start and on every reload; "
                      + "a changed path needs a restart."),

        ConfigKey("bluetooth.adapter", .adapters, default: .value(.string("hci0")),
                  "BlueZ adapter to use, or a list of them: each takes `max_connections` wristbands; a wristband "
                      + "goes to the adapter with the most free slots that hears it, one attempt at a time per "
                      + "adapter. A changed list needs a restart."),
        ConfigKey("bluetooth.mode", .oneOf(["active", "background"]), default: .value(.string("active")),
                  "Power mode at start: `active` scans while a wristband is missing; `background` duty-cycles scanning "
                      + "and batches less often (SIGUSR1/SIGUSR2 and `empalinkctl mode` switch at run time)."),
        ConfigKey("bluetooth.rssi_min", .integer(-127...20), default: .value(.integer(-100)),
                  "Ignore advertisements weaker than this (dBm); passed to BlueZ's discovery filter. -127 sets no "
                      + "threshold, which also keeps controllers that report no RSSI."),
        ConfigKey("bluetooth.max_connections", .integer(1...32), default: .value(.integer(5)),
                  "Most wristbands connected at once, per adapter."),
        ConfigKey("bluetooth.connect_timeout_s", .integer(1...300), default: .value(.integer(20)),
                  "Seconds a connection attempt may take, services resolved included."),
        ConfigKey("bluetooth.reconnect_initial_s", .integer(1...3600), default: .value(.integer(1)),
                  "First reconnect delay; doubles per failure with jitter."),
        ConfigKey("bluetooth.reconnect_max_s", .integer(1...3600), default: .value(.integer(60)),
                  "Longest reconnect delay. Must be at least `reconnect_initial_s`."),
        ConfigKey("bluetooth.background_scan_window_s", .integer(1...3600), default: .value(.integer(10)),
                  "In background mode, seconds of discovery per interval."),
        ConfigKey("bluetooth.background_scan_interval_s", .integer(1...86400), default: .value(.integer(120)),
                  "In background mode, seconds from one scan window to the next. Must be at least the window."),
        ConfigKey("bluetooth.watchdog_s", .integer(0...3600), default: .value(.integer(60)),
                  "Seconds of discovery without any advertisement, while a wristband is missing, before the "
                      + "watchdog restarts discovery, then power-cycles the adapter, then reports Bluetooth not "
                      + "available (0: off)."),

        ConfigKey("wristband.serial", .serial, default: .derived("from `address`"),
                  "Device serial: lower-case hex of the address's last three bytes, e.g. `\"9ff167\"`. "
                      + "Give `serial`, `address` or both (they must agree)."),
        ConfigKey("wristband.address", .address, default: .unset("unset: matched by serial"),
                  "Bluetooth address, e.g. `\"00:07:80:9F:F1:67\"`."),
        ConfigKey("wristband.label", .string(0...128), default: .value(.string("")),
                  "Free text published in the device's status, e.g. a bed or study id."),
        ConfigKey("wristband.profile", .oneOf(["e4", "hrs"]), default: .unset("unset: recognised from the advertisement"),
                  "Device kind: `e4` (Empatica E4/E3) or `hrs` (a standard Bluetooth heart-rate sensor: chest strap, "
                      + "armband). An `hrs` device needs no serial in the API key's device list: the whitelist is enough."),
        ConfigKey("wristband.id", .identifier, default: .derived("the serial"),
                  "The device's level in its MQTT topics (`P/A/<id>/…`), instead of the serial; unique among the "
                      + "entries' ids and serials."),

        ConfigKey("mqtt.host", .host, default: .value(.string("localhost")),
                  "Broker host name or address."),
        ConfigKey("mqtt.port", .integer(1...65535), default: .derived("`1883`, or `8883` with TLS"),
                  "Broker port."),
        ConfigKey("mqtt.client_id", .string(1...256), default: .derived("`\"empalink-<agent.id>\"`"),
                  "MQTT client identifier; must be unique on the broker."),
        ConfigKey("mqtt.username", .string(1...256), default: .unset("unset: anonymous"),
                  "User name for the broker."),
        ConfigKey("mqtt.password_file", .path(maxBytes: nil), default: .unset("unset: no password"),
                  "File whose first line is the password. Needs `username`."),
        ConfigKey("mqtt.protocol", .oneOf(["5", "3.1.1"]), default: .value(.string("5")),
                  "MQTT protocol version."),
        ConfigKey("mqtt.keepalive_s", .integer(5...65535), default: .value(.integer(30)),
                  "Keep-alive interval in seconds."),
        ConfigKey("mqtt.reconnect_max_s", .integer(1...3600), default: .value(.integer(60)),
                  "Longest wait between broker reconnect attempts; the wait starts at 1 s and doubles, with jitter. "
                      + "The fleet connection waits at most 3 s."),
        ConfigKey("mqtt.qos", .integer(0...2), default: .value(.integer(1)),
                  "QoS of data messages. The spool needs QoS ≥ 1 to know what the broker has."),
        ConfigKey("mqtt.topic_prefix", .topicPrefix, default: .value(.string("empalink")),
                  "First topic level(s): topics are `<prefix>/<agent.id>/…`."),
        ConfigKey("mqtt.max_inflight", .integer(1...65535), default: .value(.integer(100)),
                  "Messages handed to the broker and not yet acknowledged; beyond it, messages go to the spool."),
        ConfigKey("mqtt.tls.ca_file", .path(maxBytes: nil), default: .unset("unset"),
                  "PEM file of CA certificates that verify the broker. Setting any `tls.*` file turns TLS on."),
        ConfigKey("mqtt.tls.ca_path", .path(maxBytes: nil), default: .unset("unset"),
                  "Directory of hashed CA certificates (e.g. `/etc/ssl/certs`)."),
        ConfigKey("mqtt.tls.cert_file", .path(maxBytes: nil), default: .unset("unset"),
                  "Client certificate (PEM). Needs `key_file`."),
        ConfigKey("mqtt.tls.key_file", .path(maxBytes: nil), default: .unset("unset"),
                  "Client private key (PEM). Needs `cert_file`."),
        ConfigKey("mqtt.tls.insecure", .boolean, default: .value(.boolean(false)),
                  "Skip verification of the broker's host name. For testing only. Needs TLS (a `tls.ca_*` or "
                      + "client certificate key): without it, an error."),

        ConfigKey("publish.streams", .subsetOf(ConfigSchema.streams),
                  default: .value(.array(ConfigSchema.streams.map {
                      TOMLValue(.string($0), at: SourcePosition(line: 0, column: 0))
                  })),
                  "Streams published per device (`contact`: heart-rate sensors only)."),
        ConfigKey("publish.bvp", .oneOf(["filtered", "raw"]), default: .value(.string("filtered")),
                  "What the `bvp` stream carries: `filtered`, the BVP with the movement artefact the accelerometer "
                      + "explains subtracted (causal, the same sample times; at rest it is the decoded BVP); `raw`, "
                      + "the decoded BVP as the wristband sent it. IBI and heart rate are computed the same either "
                      + "way."),
        ConfigKey("publish.batch_ms", .integer(0...60_000), default: .value(.integer(250)),
                  "In active mode, milliseconds of samples per message (0: one message per notification). "
                      + "Above 0 the notification sockets are read once per batch, not per notification."),
        ConfigKey("publish.background_batch_ms", .integer(0...600_000), default: .value(.integer(2000)),
                  "In background mode, milliseconds of samples per message."),
        ConfigKey("publish.metrics_interval_s", .integer(0...86400), default: .value(.integer(10)),
                  "Seconds between `metrics` messages (0: none)."),

        ConfigKey("spool.dir", .path(maxBytes: nil), default: .value(.string("/var/lib/empalink/spool")),
                  "Spool directory, created with mode 0700 if missing."),
        ConfigKey("spool.mode", .oneOf(["offline", "always"]), default: .value(.string("offline")),
                  "`offline`: spool only what the broker cannot take now. `always`: write every message ahead, "
                      + "publish it live as soon as it is in its segment file, and delete it after the broker's "
                      + "acknowledgement (replay only what was not acknowledged)."),
        ConfigKey("spool.max_bytes", .integer(1_048_576...1_099_511_627_776),
                  default: .value(.integer(268_435_456)),
                  "Most bytes on disk; then `on_full` decides."),
        ConfigKey("spool.segment_bytes", .integer(65536...1_073_741_824), default: .value(.integer(4_194_304)),
                  "Size of one spool segment file. At most `max_bytes`."),
        ConfigKey("spool.fsync_interval_ms", .integer(0...60_000), default: .value(.integer(1000)),
                  "Group-commit interval: at most this much spooled data can be lost on power loss (0: every record)."),
        ConfigKey("spool.on_full", .oneOf(["drop_oldest", "drop_newest"]), default: .value(.string("drop_oldest")),
                  "What goes when the spool is full. Every drop is counted in metrics."),
        ConfigKey("spool.replay_rate", .integer(1...1_000_000), default: .value(.integer(1000)),
                  "Most spooled messages per second replayed after the broker returns."),

        ConfigKey("control.mqtt_commands", .boolean, default: .value(.boolean(false)),
                  "Accept commands on `<prefix>/<agent.id>/cmd`."),

        ConfigKey("fleet.enabled", .boolean, default: .value(.boolean(false)),
                  "Fleet mode: wristbands are connected only under a lease negotiated on `<prefix>/fleet/#` over a "
                      + "second MQTT connection (client id `<mqtt.client_id>-fleet`); the board id is `agent.id`, "
                      + "which must then not be `fleet`. Turning it on or off needs a restart."),
    ]

    /// The key at `path`, if there is one.
    public static func key(_ path: String) -> ConfigKey? {
        self.keys.first { $0.path == path }
    }

    /// Whether some key lies below `path` (so `path` names a table).
    static func isTable(_ path: String) -> Bool {
        let prefix = path + "."
        return self.keys.contains { $0.path.hasPrefix(prefix) }
    }

    /// The keys directly below the table at `path` (one more path component), for "did you mean" hints.
    static func children(of path: String) -> [String] {
        let prefix = path + "."
        var names: [String] = []
        for key in self.keys where key.path.hasPrefix(prefix) {
            let rest = key.path.dropFirst(prefix.count)
            let child = String(rest.prefix { $0 != "." })
            if !names.contains(child) { names.append(child) }
        }
        return names
    }
}
