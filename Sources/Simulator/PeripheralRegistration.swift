/// Where the peripheral is on its way to serving: each step waits for bluetoothd to do something.
enum PeripheralRegistration: Hashable, Sendable {
    /// `org.bluez` has no owner on the bus.
    case waitingForBlueZ
    /// bluetoothd is up but the adapter object is not (yet) there.
    case waitingForAdapter
    /// The adapter is off; we asked for `Powered = true`.
    case powering
    /// Waiting for the adapter's managers, or `RegisterApplication` / `RegisterAdvertisement` are under way.
    case registering
    /// Serving and advertising.
    case registered

    /// The one-line failure when this step does not complete in time; `missing` is a manager interface the
    /// adapter does not offer yet.
    func timeoutMessage(adapter: String, after timeout: Duration, missing: String?) -> String {
        let parts = timeout.components
        let seconds = Double(parts.seconds) + Double(parts.attoseconds) / 1e18
        let text = seconds == seconds.rounded() ? String(Int64(seconds)) : String(seconds)
        let limit = "within \(text) s (--adapter-timeout)"
        switch self {
        case .waitingForBlueZ:
            return "bluetoothd (org.bluez) did not appear on the bus \(limit); is bluetooth.service running?"
        case .waitingForAdapter:
            return "adapter \(adapter) did not appear \(limit); check `btmgmt info` or the adapter name"
        case .powering:
            return "adapter \(adapter) did not power on \(limit); is it blocked (rfkill)?"
        case .registering:
            if let missing {
                return "adapter \(adapter) offered no \(missing) \(limit); does the controller support LE?"
            }
            return "bluetoothd did not complete the registration on \(adapter) \(limit)"
        case .registered:
            return "the peripheral on \(adapter) stopped unexpectedly"
        }
    }
}
