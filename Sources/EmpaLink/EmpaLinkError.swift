/// Errors of the EmpaLink API, each with a one-line description an operator can act on.
public enum EmpaLinkError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Discovery or connection before a successful ``EmpaticaAPI/authenticate(apiKey:completion:)``.
    case notAuthenticated
    /// The key was refused (unknown, expired) or the keyring could not be read.
    case authenticationFailed(String)
    /// The API key does not unlock this wristband.
    case notAllowed(serial: String)
    /// BlueZ or the adapter is not available.
    case bluetoothUnavailable(String)
    /// A BlueZ call failed; the D-Bus error name is kept (e.g. `org.bluez.Error.InProgress`).
    case bluez(name: String, message: String)
    /// The device did not finish connecting in time.
    case timedOut(String)
    /// The device does not offer what its profile requires (a required characteristic is missing).
    case profileMismatch(String)

    public var description: String {
        switch self {
        case .notAuthenticated: return "not authenticated: call authenticate(apiKey:) first"
        case .authenticationFailed(let reason): return "authentication failed: \(reason)"
        case .notAllowed(let serial): return "wristband \(serial) is not allowed by the API key"
        case .bluetoothUnavailable(let reason): return "Bluetooth unavailable: \(reason)"
        case .bluez(let name, let message): return message.isEmpty ? name : "\(name): \(message)"
        case .timedOut(let what): return "timed out: \(what)"
        case .profileMismatch(let what): return "profile mismatch: \(what)"
        }
    }
}
