/// The Bluetooth state the API reports (the SDK's `BLEStatus`).
public enum BLEStatus: String, Sendable, Equatable {
    /// BlueZ is not on the bus, or the adapter is absent or unpowered.
    case notAvailable
    case ready
    case scanning
}
