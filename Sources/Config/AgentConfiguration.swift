/// The agent's validated configuration with every default filled in (SPEC §4).
///
/// Made only by ``ConfigValidator/validate(_:environment:)``, so every value here has passed its check.
public struct AgentConfiguration: Sendable, Equatable {
    public enum LogLevel: String, Sendable, CaseIterable { case error, warn, info, debug }
    public enum PowerMode: String, Sendable, CaseIterable { case active, background }
    public enum MQTTProtocol: String, Sendable, CaseIterable {
        case v5 = "5"
        case v311 = "3.1.1"
    }
    public enum SpoolMode: String, Sendable, CaseIterable { case offline, always }
    /// Which BVP the `bvp` stream carries (`publish.bvp`): the motion-artefact-reduced signal, or the decoded one.
    public enum BVPSignal: String, Sendable, CaseIterable { case filtered, raw }
    public enum SpoolFullPolicy: String, Sendable, CaseIterable {
        case dropOldest = "drop_oldest"
        case dropNewest = "drop_newest"
    }

    public struct Agent: Sendable, Equatable {
        public var id: String
        public var logLevel: LogLevel
        public var controlSocket: String
    }

    public struct Auth: Sendable, Equatable {
        public var apiKey: String?
        public var apiKeyFile: String?
        public var keyring: String
    }

    public struct Bluetooth: Sendable, Equatable {
        /// The adapters to use, in the order given (one or more; `bluetooth.adapter`). Each takes
        /// ``maxConnections`` wristbands.
        public var adapters: [String]
        /// The first adapter (the only one on most boards).
        public var adapter: String { self.adapters.first ?? "hci0" }
        public var mode: PowerMode
        public var rssiMin: Int
        public var maxConnections: Int
        public var connectTimeoutSeconds: Int
        public var reconnectInitialSeconds: Int
        public var reconnectMaxSeconds: Int
        public var backgroundScanWindowSeconds: Int
        public var backgroundScanIntervalSeconds: Int
        public var watchdogSeconds: Int
    }

    /// One whitelisted wristband. `serial` is always known (given, or derived from the address).
    public struct Wristband: Sendable, Equatable {
        public var serial: String
        public var address: String?
        public var label: String
        /// `"e4"` or `"hrs"`; `nil`: recognised from the advertisement.
        public var profile: String? = nil
        /// The topic level; `nil`: the serial.
        public var id: String? = nil

        /// The device's level in its MQTT topics.
        public var topicID: String { self.id ?? self.serial }
    }

    public struct TLS: Sendable, Equatable {
        public var caFile: String?
        public var caPath: String?
        public var certFile: String?
        public var keyFile: String?
        public var insecure: Bool

        /// TLS is on when any certificate file or directory is configured.
        public var enabled: Bool {
            self.caFile != nil || self.caPath != nil || self.certFile != nil || self.keyFile != nil
        }
    }

    public struct MQTT: Sendable, Equatable {
        public var host: String
        public var port: Int
        public var clientID: String
        public var username: String?
        public var passwordFile: String?
        public var protocolVersion: MQTTProtocol
        public var keepaliveSeconds: Int
        /// Longest wait between broker reconnect attempts.
        public var reconnectMaximumSeconds: Int
        public var qos: Int
        public var topicPrefix: String
        public var maxInflight: Int
        public var tls: TLS
    }

    public struct Publish: Sendable, Equatable {
        /// Stream names from ``ConfigSchema/streams``, in the order given.
        public var streams: [String]
        /// `publish.bvp`.
        public var bvp: BVPSignal
        public var batchMilliseconds: Int
        public var backgroundBatchMilliseconds: Int
        public var metricsIntervalSeconds: Int
    }

    public struct Spool: Sendable, Equatable {
        public var directory: String
        public var mode: SpoolMode
        public var maxBytes: Int64
        public var segmentBytes: Int64
        public var fsyncIntervalMilliseconds: Int
        public var onFull: SpoolFullPolicy
        public var replayRate: Int
    }

    public struct Control: Sendable, Equatable {
        public var mqttCommands: Bool
    }

    /// SPEC §18: several boards, one ward.
    public struct Fleet: Sendable, Equatable {
        public var enabled: Bool
    }

    public var agent: Agent
    public var auth: Auth
    public var bluetooth: Bluetooth
    public var wristbands: [Wristband]
    public var mqtt: MQTT
    public var publish: Publish
    public var spool: Spool
    public var control: Control
    public var fleet: Fleet

    /// Every resolved value by dotted path (wristbands excluded), for `--json` and the reference.
    public let resolved: [String: TOMLValue.Kind]
    /// Where each key written in the file is (defaults have none), for diagnostics found after validation,
    /// such as a key file that cannot be read.
    let positions: [String: SourcePosition]

    /// Where `path` (`"auth.api_key_file"`) is written in the file, or `nil` when it was not written there.
    public func position(of path: String) -> SourcePosition? {
        self.positions[path]
    }
}
