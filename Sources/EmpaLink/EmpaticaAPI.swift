#if canImport(Glibc)
import Glibc
#endif
import Bluetooth
import BlueZ
import DBus
import EventLoop
import Posix

/// The EmpaLink SDK's entry point on Linux (SPEC §7): authentication, Bluetooth status, discovery, power modes.
///
/// Everything runs on the event loop's thread, and delegates are called there, as CoreBluetooth calls its
/// delegates on its queue. Create it on the loop thread; it opens its own connection to the system bus (where
/// BlueZ is) and keeps D-Bus and BlueZ to itself: the API speaks only its own types and the `Bluetooth`
/// identifiers.
public final class EmpaticaAPI {
    /// Settings the SDK did not expose but a Linux agent needs.
    public struct Options: Sendable {
        /// The D-Bus address BlueZ is on; `nil` means the system bus (`DBUS_SYSTEM_BUS_ADDRESS`, or the standard
        /// socket).
        public var busAddress: String?
        public var adapter = "hci0"
        /// Advertisements weaker than this are ignored (BlueZ's discovery filter); -127 sets no threshold.
        public var rssiMin = -100
        /// Where ``authenticate(apiKey:completion:)`` looks keys up.
        public var keyringPath = "/etc/empalink/keyring.toml"
        public var connectTimeout: Duration = .seconds(20)
        public var reconnectInitial: Duration = .seconds(1)
        public var reconnectMax: Duration = .seconds(60)
        /// Background mode: discovery runs `backgroundScanWindow` every `backgroundScanInterval`.
        public var backgroundScanWindow: Duration = .seconds(10)
        public var backgroundScanInterval: Duration = .seconds(120)
        /// Escalate when discovery has produced no advertisement this long while a wristband is wanted;
        /// zero turns the watchdog off.
        public var watchdogTimeout: Duration = .seconds(60)

        /// The `RSSI` of the discovery filter: `rssiMin`, or none at -127 (the lowest value), so that
        /// advertisements without an RSSI (HCI's 127, "not available") are not dropped by the kernel.
        var discoveryRSSIThreshold: Int? { self.rssiMin <= -127 ? nil : self.rssiMin }
        /// In background mode, use a passive advertisement monitor where the adapter offers one (bluetoothd's
        /// experimental features); otherwise, or when `false`, duty-cycle discovery.
        public var useAdvertisementMonitor = true
        /// The kinds of device the API knows, in the order they are tried: a device is tracked (discovered,
        /// connectable) when one of them recognises it (SPEC §15).
        public var profiles: [any DeviceProfile] = [E4DeviceProfile()]

        public init() {}
    }

    public let loop: EventLoop
    let bluez: BlueZClient
    /// The notification sockets of every device, so a batch tick reads only those with data (SPEC §19); `nil`
    /// when the kernel refused an epoll instance (then each socket is asked).
    let notificationReadiness: NotificationReadiness? = try? NotificationReadiness()
    public let options: Options
    /// Whether ``close()`` closes the bus connection (the API opened it).
    let ownsConnection: Bool

    /// Called on the loop thread when the bus connection drops (the dbus-daemon restarted): the API can do nothing
    /// more; create a new one. Not called for ``close()``.
    public var onBusLost: (() -> Void)?
    /// Why the bus was lost when the loop could not watch its socket (epoll's limits); `nil` when the bus closed
    /// the connection.
    public var busLossReason: String? { self.bluez.connection.loopError.map { "cannot watch its socket: \($0)" } }
    /// Whether BlueZ still owes an answer to a subscription (`AcquireNotify`). Before ``close()`` or exiting, wait
    /// (briefly) until it does not: leaving the bus with one outstanding makes bluetoothd 5.66 use memory it has
    /// freed, and it crashed so in our VM (bluez/bluez#1784; Debian 12 ships 5.66).
    public var isSubscribing: Bool { self.bluez.outstandingNotifyAcquisitions > 0 }

    public private(set) var status: BLEStatus = .notAvailable
    /// What the current API key unlocks; `nil` until authenticated.
    public private(set) var grant: Keyring.Grant?
    public var isAuthenticated: Bool { self.grant != nil }
    /// Whether ``prepareForBackground()`` is in force.
    public var isInBackground: Bool { self.discovery.inBackground }

    weak var delegate: (any EmpaticaDelegate)?
    /// When discovery runs, and the watchdog (see ``handle(discovery:)``).
    var discovery: DiscoveryLifecycle
    /// Discovery events raised while another's actions run, handled after them.
    var pendingDiscoveryEvents: [DiscoveryLifecycle.Event] = []
    var handlingDiscoveryEvents = false
    var dutyCycleTimer: TimerHandle?
    var windowTimer: TimerHandle?
    var watchdogTimer: TimerHandle?

    /// The agent's say in whether discovery is still needed (e.g. `false` once every whitelisted wristband is
    /// connected); `nil` means discovery runs whenever it is wanted.
    public var scanPolicy: (() -> Bool)?
    /// The agent's say in a device's kind: the ``DeviceProfile/name`` its whitelist entry gives (`profile = "hrs"`),
    /// or `nil` to recognise it from its advertisement. Consulted when a device is first seen.
    public var profileAssignment: ((BluetoothAddress) -> String?)?
    /// Failed discovery requests, and the last error, for metrics and the watchdog.
    public internal(set) var discoveryFailures: UInt64 = 0
    public internal(set) var lastDiscoveryError: EmpaLinkError?

    /// Why the watchdog reports ``BLEStatus/notAvailable``, while it does.
    public var watchdogReason: String? { self.discovery.watchdogReason }
    /// Escalations so far, by step.
    public internal(set) var watchdogCounts: [WatchdogAction: UInt64] = [:]
    /// Called on every watchdog escalation, with the reason.
    public var onWatchdog: ((WatchdogAction, String) -> Void)?

    /// Background mode's passive advertisement monitor (see `EmpaticaAPI+Monitor.swift`).
    public internal(set) var monitorRegistered = false
    public internal(set) var monitorActive = false
    /// Matches the monitor reported, for metrics.
    public internal(set) var monitorMatches: UInt64 = 0

    /// Every device a profile recognised, by BlueZ object path.
    var devicesByPath: [String: EmpaticaDeviceManager] = [:]
    /// Whether notification sockets are read at ``drainNotifications()`` (the batch tick) rather than as each
    /// notification arrives (``EmpaticaAPI+Reads.swift``).
    public var defersNotificationReads = false {
        didSet {
            guard oldValue != self.defersNotificationReads else { return }
            for device in self.devicesByPath.values { device.applyReadMode() }
        }
    }
    /// Called when notifications wait in a socket and nothing drains them yet (reads deferred, wake-ups armed).
    public var onNotificationsPending: (() -> Void)?

    /// Creates the API on `loop`, connected to the bus of ``Options/busAddress``.
    ///
    /// - Throws: ``EmpaLinkError/bluetoothUnavailable(_:)`` when the bus cannot be reached.
    public convenience init(loop: EventLoop, options: Options = Options()) throws(EmpaLinkError) {
        let address = options.busAddress ?? DBusConnection.systemBusAddress
        let connection: DBusConnection
        do {
            connection = try DBusConnection.connect(address: address, loop: loop)
        } catch {
            throw .bluetoothUnavailable("cannot reach the system bus at \(address): \(error)")
        }
        do {
            try self.init(connection: connection, options: options, ownsConnection: true)
        } catch {
            connection.close()
            throw .bluetoothUnavailable("cannot watch BlueZ on \(address): \(error)")
        }
    }

    /// Creates the API on an open `connection` (tests bring their own bus).
    init(connection: DBusConnection, options: Options = Options(), ownsConnection: Bool = false) throws(DBusError) {
        self.loop = connection.loop
        self.bluez = BlueZClient(connection: connection)
        self.options = options
        let watchdogSeconds = Int(options.watchdogTimeout.components.seconds)
        self.discovery = DiscoveryLifecycle(
            watchdogSeconds: options.watchdogTimeout > .zero ? max(1, watchdogSeconds) : 0
        )
        self.ownsConnection = ownsConnection
        self.bluez.onEvent = { [weak self] event in self?.handle(event) }
        self.bluez.onOwnerChange = { [weak self] from, to, abandoned in
            self?.delegate?.didChangeBlueZOwner(from: from, to: to, abandonedCalls: abandoned)
        }
        try self.bluez.start()
        if ownsConnection {
            connection.onDisconnect = { [weak self] in self?.onBusLost?() }
        }
    }

    /// Stops following BlueZ and, when the API opened it, closes the bus connection. Connected wristbands are left
    /// to BlueZ, which drops them with the connection; call ``EmpaticaDeviceManager/disconnect()`` first to end
    /// them cleanly.
    public func close() {
        self.bluez.stop()
        guard self.ownsConnection else { return }
        self.onBusLost = nil
        self.bluez.connection.close()
    }

    /// Addresses and UUIDs BlueZ sent that did not parse, ignored (for metrics).
    public var malformedIdentifiers: UInt64 { self.bluez.cache.malformedIdentifiers }
    /// BlueZ signals without BlueZ's shape (wrong argument count or types), dropped (for metrics).
    public var malformedSignals: UInt64 { self.bluez.cache.malformedSignals }
    /// Replies to our BlueZ calls without BlueZ's shape, refused (for metrics).
    public var malformedReplies: UInt64 { self.bluez.malformedReplies }
    /// Times `org.bluez` left an owner (for metrics).
    public var ownerChanges: UInt64 { self.bluez.ownerChanges }
    /// Calls in flight at an owner change, failed there (for metrics).
    public var abandonedCalls: UInt64 { self.bluez.abandonedCalls }
    /// Answers from an owner that had lost the name, refused (for metrics).
    public var staleReplies: UInt64 { self.bluez.staleReplies }
    /// What the latest malformed reply or signal was, for the journal.
    public var lastMalformed: String? { self.bluez.lastMalformed }

    var adapterPath: String { BlueZNames.root + "/" + self.options.adapter }

    // MARK: Authentication

    /// Checks `apiKey` offline against the keyring; `completion` runs on the loop thread.
    public func authenticate(apiKey: String, completion: @escaping (Result<Void, EmpaLinkError>) -> Void) {
        let result = self.authenticateNow(apiKey: apiKey)
        _ = try? self.loop.scheduleTimer(after: .zero) { completion(result) }
    }

    /// The `async` form of ``authenticate(apiKey:completion:)``.
    public func authenticate(apiKey: String) throws(EmpaLinkError) {
        try self.authenticateNow(apiKey: apiKey).get()
    }

    func authenticateNow(apiKey: String) -> Result<Void, EmpaLinkError> {
        let bytes: [UInt8]
        do {
            bytes = try readFile(atPath: self.options.keyringPath, limit: 4 << 20)
        } catch {
            return .failure(.authenticationFailed("cannot read keyring \(self.options.keyringPath): \(error)"))
        }
        let keyring: Keyring
        do {
            keyring = try Keyring.parse(bytes)
        } catch {
            let first = error.diagnostics.first.map { $0.formatted(path: self.options.keyringPath) } ?? ""
            return .failure(.authenticationFailed("invalid keyring: \(first)"))
        }
        switch keyring.authenticate(apiKey: apiKey, today: CalendarDay.today) {
        case .failure(let refusal):
            return .failure(.authenticationFailed(refusal.description))
        case .success(let grant):
            self.grant = grant
            for device in self.devicesByPath.values { device.allowed = Self.allows(grant, device) }
            self.reportDevices()
            return .success(())
        }
    }

    // MARK: Status

    /// Whether BlueZ is up and the adapter present and powered (the watchdog aside).
    var adapterUsable: Bool {
        self.bluez.isAvailable && self.bluez.adapter(at: self.adapterPath)?.powered == true
    }

    func updateStatus() {
        let new: BLEStatus
        if !self.adapterUsable || self.watchdogReason != nil {
            new = .notAvailable
        } else {
            new = self.bluez.adapter(at: self.adapterPath)?.discovering == true ? .scanning : .ready
        }
        if !self.adapterUsable {
            self.handle(discovery: .adapterUnusable)
        }
        guard new != self.status else { return }
        self.status = new
        self.delegate?.didUpdateBLEStatus(new)
    }

    // MARK: Events from BlueZ

    func handle(_ event: BlueZEvent) {
        switch event {
        case .available:
            for path in self.bluez.cache.paths(with: BlueZNames.device, below: self.adapterPath) {
                self.deviceChanged(path)
            }
            self.updateStatus()
            self.reconcileDiscovery()
            for device in self.devicesByPath.values { device.bluezAvailable() }
        case .unavailable:
            self.handle(discovery: .bluezGone)
            for device in self.devicesByPath.values { device.bluezVanished() }
            self.updateStatus()
        case .interfacesAdded(let path, let interfaces):
            if interfaces.contains(BlueZNames.device) {
                // Another adapter's object of a device is that adapter's API's business.
                guard self.isOnAdapter(path) else { return }
                if self.bluez.device(at: path)?.rssi != nil { self.sawAdvertisement() }
                self.deviceChanged(path)
                // A wristband we want that BlueZ forgot (restart, out of range) is back: connect it again.
                self.devicesByPath[path]?.objectsChanged()
            } else if interfaces.contains(BlueZNames.adapter) {
                self.updateStatus()
                self.reconcileDiscovery()
            }
            self.deviceOwning(path)?.objectsChanged()
        case .interfacesRemoved(let path, let interfaces):
            if interfaces.contains(BlueZNames.device), let device = self.devicesByPath[path] {
                device.bluezRemoved()
                if device.deviceStatus == .disconnected && !device.wantsConnection {
                    self.devicesByPath[path] = nil
                }
                self.reportDevices()
            } else if interfaces.contains(BlueZNames.adapter) {
                self.updateStatus()
            }
        case .propertiesChanged(let path, let interface, let names):
            switch interface {
            case BlueZNames.adapter where path == self.adapterPath:
                self.updateStatus()
                if names.contains("Powered") || names.contains("Discovering") { self.reconcileDiscovery() }
            case BlueZNames.device:
                guard self.isOnAdapter(path) else { return }
                if names.contains("RSSI"), self.bluez.device(at: path)?.rssi != nil { self.sawAdvertisement() }
                self.deviceChanged(path, names: names)
            case BlueZNames.gattCharacteristic where names.contains("Value"):
                self.deviceOwning(path)?.characteristicValueChanged(path)
            default:
                break
            }
        }
    }

    func deviceOwning(_ path: String) -> EmpaticaDeviceManager? {
        self.devicesByPath.first { path.hasPrefix($0.key + "/") }?.value
    }

    /// A device appeared or changed: track devices a profile recognises, report new ones, pass state changes on.
    /// Whether `path` is an object below this API's adapter (`/org/bluez/hci0/…`): BlueZ has one device object per
    /// adapter that heard a device, and each adapter's API tracks its own.
    func isOnAdapter(_ path: String) -> Bool {
        path.hasPrefix(self.adapterPath + "/")
    }

    func deviceChanged(_ path: String, names: [String] = []) {
        guard self.isOnAdapter(path), let info = self.bluez.device(at: path) else { return }
        let announced = (names.isEmpty || names.contains("RSSI"))
            && EmpaticaDeviceManager.reportedRSSI(info.rssi) != nil
        if let device = self.devicesByPath[path] {
            device.update(info)
            if announced { device.rssiAnnouncedAt = .now }
            device.propertiesChanged(names)
            if names.contains("Name") { self.reportDevices() }
            return
        }
        guard let address = info.address, let profile = self.profile(for: address, info) else { return }
        let device = EmpaticaDeviceManager(api: self, path: path, address: address, info: info, profile: profile)
        device.allowed = self.grant.map { Self.allows($0, device) } ?? false
        if announced { device.rssiAnnouncedAt = .now }
        self.devicesByPath[path] = device
        self.reportDevices()
    }

    /// The profile a device is tracked under: the one ``profileAssignment`` names for its address, else the first of
    /// ``Options/profiles`` that recognises what it advertised.
    func profile(for address: BluetoothAddress, _ info: BlueZDeviceInfo) -> (any DeviceProfile)? {
        if let wanted = self.profileAssignment?(address),
           let assigned = self.options.profiles.first(where: { $0.name == wanted }) {
            return assigned
        }
        return self.options.profiles.first { $0.recognizes(name: info.name, serviceUUIDs: info.serviceUUIDs) }
    }

    /// Whether `grant` unlocks `device`: its serial in the key's device list, or — for a profile that needs no key
    /// grant (third-party heart-rate sensors) — any authenticated key.
    static func allows(_ grant: Keyring.Grant, _ device: EmpaticaDeviceManager) -> Bool {
        !device.profile.requiresKeyGrant || grant.allows(serial: device.serialNumber)
    }

    func reportDevices() {
        guard let delegate = self.delegate else { return }
        delegate.didDiscoverDevices(self.devices)
    }

    /// Every device known now (of any profile), ordered by address.
    public var devices: [EmpaticaDeviceManager] {
        self.devicesByPath.values.sorted { $0.address < $1.address }
    }

    /// The wristband with `serial`, if known.
    public func device(serial: String) -> EmpaticaDeviceManager? {
        let wanted = serial.lowercased()
        return self.devicesByPath.values.first { $0.serialNumber == wanted }
    }
}
