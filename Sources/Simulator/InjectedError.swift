import DBus

/// An error the control interface armed for the next calls of one BlueZ method.
struct InjectedError {
    var error: DBusError
    var remaining: Int
}
