import Agent
import Config
import MQTT

/// The only place the consumer tools build ``MQTTClient/Options``: the agent's `[mqtt]` keys (SPEC §4) —
/// TLS, credentials, protocol, keepalive — from `--config FILE`, with `--host`/`--port` on top. No will: a consumer
/// publishes nothing.
public enum ConsumerMQTTOptions {
    /// - Parameters:
    ///   - host: `--host`, or `nil` for the configuration's (or `localhost`).
    ///   - port: `--port`, or `nil` for the configuration's (1883, or 8883 with TLS).
    ///   - configuration: the `[mqtt]` table of `--config FILE`, if given.
    ///   - clientID: unique per process, so that two consumers never take each other's session.
    /// - Throws: ``MQTTError/Code/configuration`` when `mqtt.password_file` cannot be read.
    public static func make(host: String?, port: Int?, configuration: AgentConfiguration.MQTT?,
                            clientID: String) throws(MQTTError) -> MQTTClient.Options {
        guard let mqtt = configuration else {
            return MQTTClient.Options(host: host ?? "localhost", port: port ?? 1883, clientID: clientID,
                                      maxInflight: 20, contentType: nil, reconnectMaximum: .seconds(10))
        }
        var password: String?
        if let path = mqtt.passwordFile { password = try MQTTClient.Options.readPassword(path) }
        let tls = mqtt.tls
        return MQTTClient.Options(
            host: host ?? mqtt.host,
            port: port ?? mqtt.port,
            clientID: clientID,
            username: mqtt.username,
            password: password,
            protocolVersion: mqtt.protocolVersion == .v5 ? .v5 : .v311,
            keepaliveSeconds: mqtt.keepaliveSeconds,
            maxInflight: 20,
            tls: tls.enabled || tls.insecure
                ? MQTTClient.TLS(caFile: tls.caFile, caPath: tls.caPath, certFile: tls.certFile, keyFile: tls.keyFile,
                                 insecure: tls.insecure)
                : nil,
            contentType: nil,
            reconnectMaximum: .seconds(10)
        )
    }
}
