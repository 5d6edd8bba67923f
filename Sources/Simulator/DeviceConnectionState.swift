/// A simulated device's link state.
enum DeviceConnectionState: Sendable {
    case disconnected
    case connecting
    case connected
    case disconnecting
}
