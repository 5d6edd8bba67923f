import CMosquitto

/// The MQTT protocol revision a client speaks.
public enum MQTTProtocolVersion: Sendable, Hashable {
    /// MQTT 5: reason codes, properties (content type, message expiry), send maximum.
    case v5
    /// MQTT 3.1.1, for brokers that do not speak 5.
    case v311

    /// The `MQTT_PROTOCOL_*` value for `MOSQ_OPT_PROTOCOL_VERSION`.
    var mosquittoValue: CInt {
        switch self {
        case .v5: CInt(MQTT_PROTOCOL_V5)
        case .v311: CInt(MQTT_PROTOCOL_V311)
        }
    }
}
