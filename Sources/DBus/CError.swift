import CDBus

/// libdbus's C error struct (our Swift ``DBusError`` takes the unqualified name).
typealias CDBusError = CDBus.DBusError

/// Runs `body` with an initialised libdbus error and frees it afterwards (STYLE.md's `withDBusError`).
///
/// - Returns: `body`'s result, or the error libdbus set, preserving its name.
func withDBusError<T>(_ body: (UnsafeMutablePointer<CDBusError>) -> T) -> Result<T, DBusError> {
    var error = CDBusError()
    dbus_error_init(&error)
    defer { dbus_error_free(&error) }
    let result = body(&error)
    if dbus_error_is_set(&error) != 0 {
        let name = error.name.map { String(cString: $0) } ?? DBusError.failedName
        let message = error.message.map { String(cString: $0) } ?? ""
        return .failure(DBusError(name: name, message: message))
    }
    return .success(result)
}
