/// A wristband's connection state (the SDK's `DeviceStatus`).
public enum DeviceStatus: String, Sendable, Equatable {
    case disconnected
    case connecting
    case connected
    case disconnecting
}
