/// What changed in BlueZ, as the client reports it on the loop thread.
public enum BlueZEvent: Sendable, Equatable {
    /// BlueZ is on the bus and the object snapshot is loaded (at start, and again after a bluetoothd restart).
    case available
    /// BlueZ left the bus (bluetoothd stopped or restarted); every object is gone.
    case unavailable
    case interfacesAdded(path: String, interfaces: [String])
    case interfacesRemoved(path: String, interfaces: [String])
    case propertiesChanged(path: String, interface: String, names: [String])
}
