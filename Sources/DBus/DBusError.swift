/// A D-Bus error: a name such as `org.bluez.Error.InProgress` and a human-readable message.
///
/// Names are kept exactly as the peer sent them, because callers react to specific ones (BlueZ's `InProgress`,
/// `NotReady`, `Failed: le-connection-abort-by-local`, …).
public struct DBusError: Error, Hashable, Sendable, CustomStringConvertible {
    public var name: String
    public var message: String

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    /// `NAME: MESSAGE`.
    public var description: String { self.message.isEmpty ? self.name : "\(self.name): \(self.message)" }

    // Errors this layer produces itself.
    public static let noReplyName = "org.freedesktop.DBus.Error.NoReply"
    public static let disconnectedName = "org.freedesktop.DBus.Error.Disconnected"
    public static let invalidArgsName = "org.freedesktop.DBus.Error.InvalidArgs"
    public static let noMemoryName = "org.freedesktop.DBus.Error.NoMemory"
    public static let failedName = "org.freedesktop.DBus.Error.Failed"
    public static let unknownMethodName = "org.freedesktop.DBus.Error.UnknownMethod"
    public static let unknownObjectName = "org.freedesktop.DBus.Error.UnknownObject"
    public static let unknownInterfaceName = "org.freedesktop.DBus.Error.UnknownInterface"
    public static let unknownPropertyName = "org.freedesktop.DBus.Error.UnknownProperty"
    public static let propertyReadOnlyName = "org.freedesktop.DBus.Error.PropertyReadOnly"

    /// Arguments that cannot be marshalled (invalid object path, string with NUL, …), caught before libdbus sees
    /// them: libdbus aborts the process on such misuse.
    static func invalidArgs(_ message: String) -> DBusError {
        DBusError(name: DBusError.invalidArgsName, message: message)
    }

    static let noMemory = DBusError(name: DBusError.noMemoryName, message: "out of memory")
    static let disconnected = DBusError(name: DBusError.disconnectedName, message: "not connected to the bus")
}
