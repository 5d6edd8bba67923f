import DBus

/// The error replies bluetoothd 5.66 sends (`src/error.c`), with its exact names and messages, so that clients
/// written against real BlueZ take the same branches against the simulator.
enum BlueZError {
    static let prefix = "org.bluez.Error."

    /// `btd_error_busy`: a second `StartDiscovery` from the same client.
    static var busy: DBusError { DBusError(name: prefix + "InProgress", message: "Operation already in progress") }
    /// `btd_error_in_progress`: a `Connect` while one is pending, `AcquireNotify` while notifying.
    static var inProgress: DBusError { DBusError(name: prefix + "InProgress", message: "In Progress") }
    /// `btd_error_not_ready`: the adapter is not powered.
    static var notReady: DBusError { DBusError(name: prefix + "NotReady", message: "Resource Not Ready") }
    static var invalidArguments: DBusError {
        DBusError(name: prefix + "InvalidArguments", message: "Invalid arguments in method call")
    }
    static var doesNotExist: DBusError { DBusError(name: prefix + "DoesNotExist", message: "Does Not Exist") }
    static var notSupported: DBusError {
        DBusError(name: prefix + "NotSupported", message: "Operation is not supported")
    }
    static var notConnected: DBusError { DBusError(name: prefix + "NotConnected", message: "Not Connected") }
    /// A remote's "invalid attribute value length" as the central's bluetoothd reports it (`att_ecode_to_error`).
    static var invalidLength: DBusError { DBusError(name: prefix + "InvalidArguments", message: "Invalid Length") }
    /// What a GATT application answers for a value of the wrong length (bluetoothd turns it into the ATT error).
    static var invalidValueLength: DBusError {
        DBusError(name: prefix + "InvalidValueLength", message: "Invalid Value Length")
    }
    static func failed(_ message: String) -> DBusError { DBusError(name: prefix + "Failed", message: message) }
    static func notPermitted(_ message: String) -> DBusError {
        DBusError(name: prefix + "NotPermitted", message: message)
    }
}
