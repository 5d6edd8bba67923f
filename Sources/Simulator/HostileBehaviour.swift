/// One `[[hostile]]` entry of a scenario: a simulated wristband (or all of them) whose "bluetoothd" breaks BlueZ's
/// contract on purpose, to prove that a client survives whatever owns `org.bluez` (SPEC §12: never trust a peer).
/// Every switch is off by default; the wristbands not named keep behaving like bluetoothd 5.66.
public struct HostileBehaviour: Hashable, Sendable {
    /// What `AcquireNotify` hands out instead of a `SOCK_SEQPACKET` socket.
    public enum NotifySocket: String, Hashable, Sendable, CaseIterable {
        case seqpacket, stream, datagram, pipe
    }

    /// The BlueZ call during which `org.bluez` changes owner (``ownerChangeMidCall``).
    public enum OwnerChangeCall: String, Hashable, Sendable, CaseIterable {
        case connect
    }

    /// What the old owner does with the call it was answering when it lost the name.
    public enum StaleReply: String, Hashable, Sendable, CaseIterable {
        /// Replies success 500 ms after the new owner serves: a reply from a connection that no longer owns the name.
        case late
        /// Never replies (the connection stays open until the simulator stops, so the bus sends no error either).
        case never
    }

    /// Address, serial, 1-based index or `*`, as in `[[fault]]`.
    public var device = "*"
    /// `Device1` exported with every property of the wrong D-Bus type (`Address` an `i`, `RSSI` an `s`, `UUIDs` an
    /// `s`, …): the device cannot be identified.
    public var wrongTypes = false
    /// Signals per second on the device's path with BlueZ's member names but the wrong shapes: `PropertiesChanged`,
    /// `InterfacesAdded` and `InterfacesRemoved` with missing, extra or wrongly typed arguments.
    public var malformedSignalsPerSecond = 0
    /// `AcquireNotify` answers its MTU as this `x` (int64) instead of a `q` in 23…517.
    public var acquireNotifyMTU: Int64?
    /// `AcquireNotify` hands out this kind of descriptor.
    public var notifySocket = NotifySocket.seqpacket
    /// Every notification padded to this many bytes (0: off), far beyond the negotiated MTU.
    public var oversizedNotifications = 0
    /// `PropertiesChanged` signals per second on the device (`RSSI`, `Name`, `ManufacturerData`, an unknown
    /// property), on top of everything else.
    public var propertiesFloodPerSecond = 0
    /// Every this many seconds (0: off) the device's objects vanish (`InterfacesRemoved`) and come back twice
    /// (two identical `InterfacesAdded`), in clients' eyes only: the simulator's own tree does not change.
    public var vanishSeconds = 0.0
    /// The first such call to the device (once per run) is not answered by the owner of `org.bluez`: a second
    /// connection of the simulator takes the name over (`DBUS_NAME_FLAG_REPLACE_EXISTING`), serves a fresh tree,
    /// and the old connection answers as ``staleReply`` says. Bus-wide in effect: every wristband's session ends.
    public var ownerChangeMidCall: OwnerChangeCall?
    public var staleReply = StaleReply.late

    public init() {}
}
