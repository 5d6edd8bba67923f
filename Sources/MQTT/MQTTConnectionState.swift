/// Where an ``MQTTClient``'s connection stands.
public enum MQTTConnectionState: Sendable, Hashable, CustomStringConvertible {
    /// Created; ``MQTTClient/start()`` not called yet, or stopped by ``MQTTClient/disconnect()``.
    case idle
    /// A socket is open (TCP, TLS handshake, or CONNECT sent) and CONNACK has not arrived.
    case connecting
    /// CONNACK accepted: publishes are taken.
    case connected
    /// The last attempt failed or the connection broke; the reconnect timer is armed.
    case waitingToReconnect
    /// ``MQTTClient/disconnect()`` sent DISCONNECT; the broker closes the connection next.
    case disconnecting
    /// ``MQTTClient/close()`` released the libmosquitto handle; the client cannot be used again.
    case closed

    public var description: String {
        switch self {
        case .idle: "idle"
        case .connecting: "connecting"
        case .connected: "connected"
        case .waitingToReconnect: "waiting to reconnect"
        case .disconnecting: "disconnecting"
        case .closed: "closed"
        }
    }
}
