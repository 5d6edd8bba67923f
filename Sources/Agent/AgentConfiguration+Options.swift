import Config
import MQTT
import Posix
import Spool

// The agent's configuration translated into the option values of the modules it wires (SPEC §15): `MQTT` and
// `Spool` know nothing of the configuration schema, the agent's topics or its secret files.

extension MQTTClient.Options {
    /// The agent's MQTT options from its `[mqtt]` configuration (SPEC §4, §10).
    ///
    /// The will is the retained `{"state":"offline"}` on `<topic_prefix>/<agentID>/status` at the configured QoS.
    /// The password is the first line of `password_file`, read now.
    ///
    /// - Throws: ``MQTTError/Code/configuration`` naming the file and the reason when the password file cannot be
    ///   read or is empty.
    public init(_ configuration: AgentConfiguration.MQTT, agentID: String) throws(MQTTError) {
        var password: String?
        if let path = configuration.passwordFile {
            password = try Self.readPassword(path)
        }
        let tls = configuration.tls
        self.init(
            host: configuration.host,
            port: configuration.port,
            clientID: configuration.clientID,
            username: configuration.username,
            password: password,
            protocolVersion: configuration.protocolVersion == .v5 ? .v5 : .v311,
            keepaliveSeconds: configuration.keepaliveSeconds,
            maxInflight: configuration.maxInflight,
            tls: tls.enabled || tls.insecure
                ? MQTTClient.TLS(
                    caFile: tls.caFile, caPath: tls.caPath, certFile: tls.certFile, keyFile: tls.keyFile,
                    insecure: tls.insecure
                )
                : nil,
            will: MQTTClient.Will(
                topic: AgentTopics.status(prefix: configuration.topicPrefix, agentID: agentID),
                payload: Array(AgentTopics.offlinePayload.utf8),
                qos: configuration.qos,
                retain: true
            ),
            reconnectMaximum: .seconds(Int64(configuration.reconnectMaximumSeconds))
        )
    }

    /// The first line of a password file, without its line ending.
    ///
    /// - Throws: ``MQTTError/Code/configuration``: "mqtt.password_file /etc/x: cannot read: Permission denied".
    public static func readPassword(_ path: String) throws(MQTTError) -> String {
        let bytes: [UInt8]
        do {
            bytes = try readFile(atPath: path, limit: 64 << 10)
        } catch {
            throw MQTTError(.configuration, "mqtt.password_file \(path): cannot read: \(error)")
        }
        let line = bytes.prefix { $0 != UInt8(ascii: "\n") && $0 != UInt8(ascii: "\r") }
        guard !line.isEmpty else {
            throw MQTTError(.configuration, "mqtt.password_file \(path): the first line is empty")
        }
        return String(decoding: line, as: UTF8.self)
    }
}

extension SpoolOptions {
    /// The spool options of a validated `[spool]` table (the mode stays with the agent: the spool does not use it).
    public init(_ configuration: AgentConfiguration.Spool) {
        let onFull: FullPolicy
        switch configuration.onFull {
        case .dropOldest: onFull = .dropOldest
        case .dropNewest: onFull = .dropNewest
        }
        self.init(
            directory: configuration.directory,
            maxBytes: Int(configuration.maxBytes),
            segmentBytes: Int(configuration.segmentBytes),
            fsyncIntervalMilliseconds: configuration.fsyncIntervalMilliseconds,
            onFull: onFull,
            replayRate: configuration.replayRate
        )
    }
}

/// The agent-level topic names (SPEC §10), in one place for the agent and its Last Will.
enum AgentTopics {
    /// `P/A`.
    static func base(prefix: String, agentID: String) -> String { prefix + "/" + agentID }

    /// `P/A/status`, retained; also the Last Will's topic.
    static func status(prefix: String, agentID: String) -> String { base(prefix: prefix, agentID: agentID) + "/status" }

    /// What `P/A/status` says when the agent is gone (Last Will, clean shutdown).
    static let offlinePayload = #"{"state":"offline"}"#
}
