/// What the simulated bluetoothd does where real ones differ (scenario table `[bluetoothd]`).
///
/// The defaults are what Debian's bluetoothd 5.66 did in the VM of issue #10 (`vm/FINDINGS.md`), so that clients
/// are tested against the real daemon's habits — except `Connected = true`, which is signalled by default as on
/// real radios (see ``signalsConnected``).
public struct BluetoothdBehaviour: Hashable, Sendable {
    /// The ATT MTU a connection negotiates: `AcquireNotify`'s `q` and `GattCharacteristic1.MTU` while connected.
    ///
    /// 517 is what two BlueZ ends agree on (bluetoothd asks for its maximum, 517); what a real E4 accepts is not
    /// known, and its 20-byte notifications fit the minimum, 23, as well. Clients size buffers from it.
    public var attMTU: UInt16 = 517
    /// Whether `Connected = true` is signalled after a `Connect`.
    ///
    /// On real radios bluetoothd signals it (the kernel's "device connected" event comes before the ATT channel;
    /// a Raspberry Pi 400's log in bleak issue #1491), and bleak 0.22.3 needs it: it waits for services only while
    /// its cached `Connected` is true. In the VM, on btvirt, bluetoothd 5.66 did not: the ATT channel marked the LE
    /// bearer connected first and the later event returned before emitting (the value still reads true).
    /// `false` reproduces that; the agent's tests run both.
    public var signalsConnected = true
    /// bluetoothd restarts its LE scan about every 10 s and then re-announces each device's `RSSI`, even
    /// unchanged; 0 announces only changes of 8 dBm or more.
    public var scanRestartSeconds = 10.0

    /// Whether `ServicesResolved = true` is signalled before the GATT objects' `InterfacesAdded`.
    ///
    /// In the VM bluetoothd 5.66 signalled it while most of the characteristics were still to be announced
    /// (BlueZ's gdbus queues `InterfacesAdded` and sends them from its main loop later), so a client that looks
    /// for the profile when services resolve may not find it yet. `true` announces the GATT objects
    /// `early_services_ms` later; off by default because bleak 0.22.3 reads its services at that moment.
    public var resolvesBeforeExport = false
    /// How long after `ServicesResolved` the GATT objects follow when ``resolvesBeforeExport`` is on.
    public var lateExportMilliseconds = 500

    /// How long `AcquireNotify` takes to answer, in milliseconds.
    ///
    /// bluetoothd answers only once the central's write of the characteristic's CCC descriptor has been
    /// acknowledged over the air — a connection interval or more, seconds on a loaded link. bluetoothd 5.66 has set
    /// up the client and its socket by then, and a client that leaves the bus before the answer makes it use freed
    /// memory (bluez/bluez#1784); the simulator counts such clients (`Stats`: `left_while_subscribing`). 0 answers
    /// at once.
    public var acquireNotifyMilliseconds = 0

    /// The characteristics (16-bit UUIDs) left out of every wristband's GATT tree; empty exports the whole profile.
    ///
    /// A firmware variant without a stream, or bluetoothd's GATT cache of an interrupted discovery, shows a client
    /// a partial profile. The agent must go on without an optional stream and fail an attempt that lacks the
    /// command or BVP characteristic; this lets its tests see both. Set by name (``characteristicNames``).
    public var omittedCharacteristics: Set<UInt16> = []

    /// The names `omit_characteristics` accepts: the stream names of SPEC §10 (`E4Stream`) and `command`.
    public static let characteristicNames: [(name: String, uuid16: UInt16)] = [
        ("bvp", 0x3EA1), ("acc", 0x3EA3), ("temp", 0x3EA6), ("gsr", 0x3EA8), ("tag", 0x3EB2), ("battery", 0x3EB3),
        ("command", 0x3E71),
    ]

    /// bluetoothd's ATT MTU before (and without) an exchange.
    public static let defaultMTU: UInt16 = 23

    public init() {}
}
