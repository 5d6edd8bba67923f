#if canImport(Glibc)
import Glibc
#endif
import CDBus
import EventLoop
import Posix

/// A private connection to a D-Bus bus, driven by an ``EventLoop``.
///
/// libdbus joins the loop through its watch and timeout functions: each socket libdbus wants watched is one
/// loop registration (libdbus's separate read and write watches on the same socket are merged), each libdbus
/// timeout is one loop timer, and incoming messages are dispatched right after the socket is read. Nothing
/// blocks the loop except the one-time `Hello` in ``connect(address:loop:)`` and the explicit name calls.
///
/// Everything here runs on the loop's thread; create, use and ``close()`` the connection there.
public final class DBusConnection {
    let raw: OpaquePointer
    public let loop: EventLoop
    /// The unique name the bus gave us, e.g. `:1.42`.
    public let uniqueName: String

    /// Called once when the connection to the bus is lost (the bus daemon went away, or ``close()``).
    public var onDisconnect: (() -> Void)?

    // Loop integration.
    var watchesByDescriptor: [CInt: WatchSet] = [:]
    var timers: [OpaquePointer: TimerHandle] = [:]
    var dispatchScheduled = false
    var isClosed = false
    var closeScheduled = false

    /// Why the connection could not be watched on the loop, if that is why it closed (or will close on the next
    /// pass): the loop refused to register or change the socket's registration.
    public internal(set) var loopError: Errno?

    // Signals and names.
    var subscriptions: [UInt64: Subscription] = [:]
    var nextSubscriptionID: UInt64 = 1
    /// Owners of well-known names we follow, so that signals can be matched by sender locally.
    var nameOwners: [String: NameOwnerState] = [:]

    /// Outstanding method calls by serial (see ``PendingReply``).
    var pendingReplies: [UInt32: PendingReply] = [:]

    // Exported objects.
    var objectServer: DBusObjectServer?

    /// One socket's libdbus watches and its loop registration.
    struct WatchSet {
        var watches: [OpaquePointer] = []
        var registration: IORegistration?
    }

    struct Subscription {
        var rule: DBusMatchRule
        var handler: (DBusMessage) -> Void
    }

    struct NameOwnerState {
        var owner: String?
        var watchers: [UInt64: (String?) -> Void] = [:]
        var subscription: UInt64?
    }

    /// The system bus address: `DBUS_SYSTEM_BUS_ADDRESS`, or the standard socket.
    public static var systemBusAddress: String {
        if let value = getenv("DBUS_SYSTEM_BUS_ADDRESS"), value.pointee != 0 { return String(cString: value) }
        return "unix:path=/run/dbus/system_bus_socket"
    }

    /// The session bus address: `DBUS_SESSION_BUS_ADDRESS`, if set.
    public static var sessionBusAddress: String? {
        guard let value = getenv("DBUS_SESSION_BUS_ADDRESS"), value.pointee != 0 else { return nil }
        return String(cString: value)
    }

    /// Opens a private connection to the bus at `address` and registers with it (`Hello`).
    ///
    /// Call on the loop's thread. The `Hello` round trip blocks (libdbus's default timeout bounds it).
    ///
    /// - Throws: ``DBusError`` with libdbus's error name when the bus cannot be reached or refuses us.
    public static func connect(address: String, loop: EventLoop) throws(DBusError) -> DBusConnection {
        DBusConnection.disableFatalWarnings()
        guard DBusNames.isValidString(address) else { throw .invalidArgs("invalid bus address") }
        let opened = withDBusError { error in dbus_connection_open_private(address, error) }
        let raw: OpaquePointer
        switch opened {
        case .success(let connection?): raw = connection
        case .success(nil): throw DBusError(name: DBusError.failedName, message: "cannot connect to \(address)")
        case .failure(let error): throw error
        }
        dbus_connection_set_exit_on_disconnect(raw, 0)
        let registered = withDBusError { error in dbus_bus_register(raw, error) }
        switch registered {
        case .success(let ok) where ok != 0: break
        case .success: 
            DBusConnection.release(raw)
            throw DBusError(name: DBusError.failedName, message: "the bus refused registration")
        case .failure(let error):
            DBusConnection.release(raw)
            throw error
        }
        let name = dbus_bus_get_unique_name(raw).map { String(cString: $0) } ?? ""
        let connection = DBusConnection(raw: raw, loop: loop, uniqueName: name)
        do {
            try connection.attachToLoop()
        } catch {
            connection.close()
            throw error
        }
        return connection
    }

    init(raw: OpaquePointer, loop: EventLoop, uniqueName: String) {
        self.raw = raw
        self.loop = loop
        self.uniqueName = uniqueName
    }

    deinit {
        // close() detaches the C callbacks that point at self; a connection dropped without close() must not
        // leave them dangling.
        if !self.isClosed {
            DBusConnection.detach(self.raw)
            DBusConnection.release(self.raw)
        }
    }

    static func release(_ raw: OpaquePointer) {
        dbus_connection_close(raw)
        dbus_connection_unref(raw)
    }

    static func detach(_ raw: OpaquePointer) {
        dbus_connection_set_watch_functions(raw, nil, nil, nil, nil, nil)
        dbus_connection_set_timeout_functions(raw, nil, nil, nil, nil, nil)
        dbus_connection_set_dispatch_status_function(raw, nil, nil, nil)
    }

    /// libdbus aborts the process on API misuse by default; we validate inputs ourselves and would rather log
    /// than crash if something slips through.
    static func disableFatalWarnings() {
        setenv("DBUS_FATAL_WARNINGS", "0", 0)
    }

    /// Whether the connection to the bus is up.
    public var isConnected: Bool {
        !self.isClosed && dbus_connection_get_is_connected(self.raw) != 0
    }

    /// Closes the connection: pending calls fail with `Disconnected`, loop registrations and timers are removed.
    public func close() {
        self.loop.assertInEventLoop()
        guard !self.isClosed else { return }
        dbus_connection_close(self.raw)
        // Let libdbus complete pending calls and deliver its Disconnected signal before detaching.
        self.dispatchAll()
        self.isClosed = true
        DBusConnection.detach(self.raw)
        for (_, set) in self.watchesByDescriptor {
            if let registration = set.registration { self.loop.deregister(registration) }
        }
        self.watchesByDescriptor = [:]
        for (_, timer) in self.timers { self.loop.cancel(timer) }
        self.timers = [:]
        dbus_connection_unref(self.raw)
        self.subscriptions = [:]
        self.objectServer = nil
        self.fireDisconnect()
    }

    func fireDisconnect() {
        self.failPendingReplies(.disconnected)
        let handler = self.onDisconnect
        self.onDisconnect = nil
        handler?()
    }
}
