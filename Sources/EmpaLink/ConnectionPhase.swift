/// Where a wristband's connection stands beneath its public ``DeviceStatus``: which step of a connection attempt is
/// under way, or that a failed attempt's link is still being released.
///
/// One value instead of a flag per step, so that no two steps can be believed at once (waiting for services while
/// also waiting for a missing characteristic, say) and every step says what it is waiting for.
enum ConnectionPhase: Equatable, Sendable {
    /// Nothing in flight: disconnected (perhaps with a reconnect timer armed), connected, or disconnecting at the
    /// application's request.
    case idle
    /// `Connect` sent and not answered yet.
    case linking
    /// The link is up, or BlueZ was already connecting the device (`InProgress`): waiting for
    /// `ServicesResolved = true`.
    case resolvingServices
    /// Services resolved but part of the profile is not exported yet (what is missing, for the log): bluetoothd 5.66
    /// may signal `ServicesResolved` before its last `InterfacesAdded`. Ends when the objects come, when only
    /// optional ones are missing and no object has come for a second, or at the attempt's deadline.
    case awaitingProfile(missing: String)
    /// Subscribing to the streams and writing the start command.
    case subscribing
    /// A failed attempt's `Disconnect` is in flight. No attempt starts before it is answered: a `Connect` now would
    /// find the old link still up, and its late `Connected = false` would end the new attempt. `retry` when an
    /// attempt was asked for meanwhile: it starts as soon as the `Disconnect` is answered.
    case releasing(retry: Bool)

    /// Whether an attempt is waiting for the GATT objects still missing from the profile.
    var isAwaitingProfile: Bool {
        if case .awaitingProfile = self { return true }
        return false
    }
}
