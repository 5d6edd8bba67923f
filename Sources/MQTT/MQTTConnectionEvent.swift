/// A change of an ``MQTTClient``'s connection, reported to ``MQTTClient/onConnectionEvent``.
public enum MQTTConnectionEvent: Sendable, Hashable {
    /// The broker accepted the connection (CONNACK success). Subscriptions have been renewed.
    case connected
    /// A connection attempt failed or an established connection ended.
    ///
    /// - `error`: the cause as one line (e.g. "connection refused: not authorised", "TLS: certificate verify
    ///   failed"); `nil` after ``MQTTClient/disconnect()``.
    /// - `retryIn`: when the next attempt starts; `nil` when the client will not retry (disconnected or closed).
    case disconnected(error: MQTTError?, retryIn: Duration?)
}
