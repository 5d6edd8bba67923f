/// How a published message ended, reported exactly once per message to its acknowledgement callback.
public enum MQTTPublishOutcome: Sendable, Hashable {
    /// QoS 0: the message was written to the socket (there is no acknowledgement at QoS 0).
    case sent
    /// QoS 1 PUBACK or QoS 2 PUBCOMP arrived with a success reason code (MQTT 5: below 0x80; 3.1.1: 0).
    case acknowledged(reasonCode: Int32)
    /// MQTT 5: the broker answered with an error reason code (≥ 0x80, e.g. 0x87 not authorised).
    case rejected(reasonCode: Int32, reason: String)
    /// QoS 0: the connection broke before the message was written.
    case lost
    /// The client was closed before the acknowledgement arrived; the broker may or may not have the message.
    case abandoned

    /// Whether the broker has (or, at QoS 0, was sent) the message.
    public var isDelivered: Bool {
        switch self {
        case .sent, .acknowledged: true
        case .rejected, .lost, .abandoned: false
        }
    }
}
