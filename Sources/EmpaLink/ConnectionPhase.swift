/// Where a wristband's connection stands beneath its public ``DeviceStatus``: which step of a connection attempt is
/// under way, or that a failed attempt's link is still being released.
///
/// One value instead of a flag per step, so that no two steps can be believed at once (waiting for services while
/// also waiting for a missing characteristic, say) and every step says what it is waiting for.
enum ConnectionPhase: Hashable, Sendable {
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
    /// A failed attempt's `Disconnect` is in flight. No attempt starts before the link is down: a `Connect` now would
    /// find the old link still up, and its late `Connected = false` would end the new attempt. `retry` when an
    /// attempt was asked for meanwhile: it starts as soon as the link is down (otherwise the backoff runs).
    /// `linkDown` when `Connected = false` came before the answer.
    case releasing(retry: Bool, linkDown: Bool)
    /// The failed attempt's `Disconnect` was answered; bluetoothd signals `Connected = false` after its answer, and the
    /// release ends with that signal or after a wait (``EmpaticaDeviceManager/linkDownWait``).
    case awaitingLinkDown(retry: Bool)

    /// Whether an attempt is waiting for the GATT objects still missing from the profile.
    var isAwaitingProfile: Bool {
        if case .awaitingProfile = self { return true }
        return false
    }

    /// Whether a failed attempt's link is being released, and if so whether an attempt was asked for meanwhile.
    var releaseRetry: Bool? {
        switch self {
        case .releasing(let retry, _), .awaitingLinkDown(let retry): return retry
        default: return nil
        }
    }

    /// Asks for an attempt once the release is over; no effect when no release is under way.
    mutating func retryAfterRelease() {
        switch self {
        case .releasing(_, let linkDown): self = .releasing(retry: true, linkDown: linkDown)
        case .awaitingLinkDown: self = .awaitingLinkDown(retry: true)
        default: break
        }
    }
}
