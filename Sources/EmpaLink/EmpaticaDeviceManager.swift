#if canImport(Glibc)
import Glibc
#endif
import Bluetooth
import BlueZ
import DBus
import EventLoop
import Posix

/// One wristband (the SDK's `EmpaticaDeviceManager`): identity, connection and data streams.
///
/// `connect(delegate:)` connects, subscribes to every stream of its ``profile`` (AcquireNotify, falling back to
/// StartNotify), starts the session (for an E4, writes the start command), and — with
/// ``ConnectOptions/autoReconnect`` — keeps the wristband connected:
/// failures and link losses are retried with exponential backoff and jitter until ``disconnect()``.
public final class EmpaticaDeviceManager {
    /// Connection behaviour beyond the SDK's one-shot connect.
    public struct ConnectOptions: Sendable {
        /// Reconnect after failures and link losses until ``disconnect()``.
        public var autoReconnect = true

        public init(autoReconnect: Bool = true) {
            self.autoReconnect = autoReconnect
        }
    }

    /// Counters for metrics.
    public struct Counters: Sendable, Equatable {
        public var notifications: UInt64 = 0
        public var connectAttempts: UInt64 = 0
        public var connectFailures: UInt64 = 0
        /// Connections lost after they were up.
        public var linkLosses: UInt64 = 0
        /// Streams subscribed through `AcquireNotify` (one notification per read on a socket).
        public var acquiredNotifications: UInt64 = 0
        /// Streams that fell back from AcquireNotify to StartNotify.
        public var startNotifyFallbacks: UInt64 = 0
    }

    weak var api: EmpaticaAPI?
    /// The BlueZ object path (BlueZ's business: not part of the API).
    let path: String
    public let address: BluetoothAddress
    /// The kind of device, which says how it is connected and decoded.
    public let profile: any DeviceProfile
    /// Lower-case hex of the address's last three bytes, e.g. `9ff167`.
    public var serialNumber: String { self.address.serial }
    /// The adapter this device object belongs to (`hci0`): BlueZ has one object per adapter that heard a device.
    public let adapter: String
    public private(set) var name: String
    public private(set) var rssi: Int?
    /// When BlueZ last announced an `RSSI` for the device (`InterfacesAdded` with one, or a `PropertiesChanged`
    /// naming it): the only sign it exposes that the device was heard. bluetoothd announces changes of 8 dBm or
    /// more and re-announces at every LE scan restart (~10 s), and keeps the last value after the device falls
    /// silent, so ``rssi`` alone does not say the device is still heard.
    public internal(set) var rssiAnnouncedAt: MonotonicInstant?
    /// Whether the API key unlocks this wristband.
    public internal(set) var allowed: Bool = false
    public private(set) var deviceStatus: DeviceStatus = .disconnected
    /// Last battery level (0…1) and when it was reported.
    public internal(set) var batteryLevel: Float?
    public internal(set) var counters = Counters()
    /// When the current connection came up (seconds since 1970).
    public internal(set) var connectedSince: Double?
    /// The last connection failure, for status reporting.
    public internal(set) var lastError: EmpaLinkError?

    weak var delegate: (any EmpaticaDeviceDelegate)?
    /// Sees every raw notification (and value read at session start) with its characteristic and arrival time
    /// before it is decoded (`empalinkctl capture`).
    public var rawTap: ((BluetoothUUID, UnsafeRawBufferPointer, Double) -> Void)?
    var options = ConnectOptions()
    /// Where the connection stands; the manager executes what it decides (see ``handle(_:)``).
    var lifecycle: ConnectionLifecycle
    /// Events raised while another's actions run, handled after them.
    var pendingEvents: [ConnectionLifecycle.Event] = []
    var handlingEvents = false
    /// The lifecycle's armed timers.
    var timers: [ConnectionLifecycle.Timer: TimerHandle] = [:]

    /// `connect` was called and `disconnect` was not.
    var wantsConnection: Bool { self.lifecycle.wantsConnection }
    /// Whether the device is meant to be connected (``connect(delegate:)`` called, ``disconnect()`` not):
    /// it is connected, connecting, or waiting to reconnect.
    public var isConnectionWanted: Bool { self.lifecycle.wantsConnection }
    /// Whether BlueZ reports a link to the device now — ours, or another central's on this adapter (a second
    /// connection to a device already connected would break both).
    public var isLinkUp: Bool { self.api?.bluez.device(at: self.path)?.connected == true }
    var streams: [NotificationStream] = []
    /// Read statistics of the streams closed so far (``notificationReads``).
    var retiredReads = NotificationReadStatistics()
    /// Characteristics subscribed through StartNotify, by path, with their channel.
    var valueSubscriptions: [String: Int] = [:]
    /// The profile's characteristics, by channel (read once: a profile may compute them).
    let channels: [ProfileCharacteristic]
    let decoder: any ProfileDecoder
    var random = SystemRandomNumberGenerator()

    init(api: EmpaticaAPI, path: String, address: BluetoothAddress, info: BlueZDeviceInfo,
         profile: any DeviceProfile) {
        self.adapter = api.options.adapter
        self.api = api
        self.path = path
        self.address = address
        self.profile = profile
        self.channels = profile.characteristics
        self.decoder = profile.makeDecoder()
        self.name = info.name ?? profile.displayName
        self.rssi = Self.reportedRSSI(info.rssi)
        self.lifecycle = ConnectionLifecycle(label: address.serial)
    }

    /// Decoder statistics summed over the streams (received, lost, duplicates, decode errors).
    public var statistics: DecoderStatistics { self.decoder.statistics }

    /// Timestamp re-anchors (SPEC §8).
    public var clockReanchors: UInt64 { self.decoder.reanchors }

    /// What the device said about itself when its session started (the standard Device Information strings, a
    /// heart-rate sensor's body location); empty for an E4.
    public var deviceInformation: DeviceInformation { self.decoder.deviceInformation }

    func update(_ info: BlueZDeviceInfo) {
        if let name = info.name { self.name = name }
        self.rssi = Self.reportedRSSI(info.rssi)
        self.handle(.deviceSeen)
    }

    /// HCI's 127 means "RSSI not available" (bluetoothd passes it on as a value): reported as unknown.
    static func reportedRSSI(_ rssi: Int?) -> Int? {
        rssi == 127 ? nil : rssi
    }

    // MARK: Public API

    /// Connects with automatic reconnection (see ``connect(delegate:options:)``).
    public func connect(delegate: any EmpaticaDeviceDelegate) throws(EmpaLinkError) {
        try self.connect(delegate: delegate, options: ConnectOptions())
    }

    /// Connects and starts streaming to `delegate`.
    ///
    /// - Throws: ``EmpaLinkError/notAuthenticated`` or ``EmpaLinkError/notAllowed(serial:)`` at once; later
    ///   failures are reported through `didUpdateDeviceStatus(.disconnected, …)` and ``lastError``.
    public func connect(delegate: any EmpaticaDeviceDelegate, options: ConnectOptions) throws(EmpaLinkError) {
        guard let api = self.api, api.isAuthenticated else { throw .notAuthenticated }
        guard self.allowed else { throw .notAllowed(serial: self.serialNumber) }
        self.delegate = delegate
        self.options = options
        self.handle(.connectRequested(autoReconnect: options.autoReconnect))
    }

    /// How long a disconnect — ours, or the release of a failed attempt's link — waits, after bluetoothd answered
    /// `Disconnect`, for the link's `Connected = false` before it takes the link for down anyway (bluetoothd may never
    /// have signalled `Connected = true`, and then signals no `false` either).
    static let linkDownWait: Duration = .seconds(2)
    /// While only optional characteristics are missing, how long without a new GATT object before the attempt goes
    /// on with what is there.
    static let profileSettleWait: Duration = .seconds(1)

    /// Disconnects and stops reconnecting. No effect when not connected.
    ///
    /// The device is `.disconnecting` until the link is down: bluetoothd answers `Disconnect` before it signals
    /// `Connected = false` (`device_remove_connection`), and an attempt started in between — a
    /// ``connect(delegate:)`` made meanwhile, or from `didUpdateDeviceStatus(.disconnected)` — would find the old
    /// link still up and be ended by that late signal.
    public func disconnect() {
        self.handle(.disconnectRequested)
    }

    // MARK: The lifecycle's events and actions

    /// Hands `event` to the lifecycle and executes its actions. Run to completion: an event raised while actions
    /// run (a delegate calling back, a profile check answering at once) is handled after them.
    func handle(_ event: ConnectionLifecycle.Event) {
        self.pendingEvents.append(event)
        guard !self.handlingEvents else { return }
        self.handlingEvents = true
        defer { self.handlingEvents = false }
        var index = 0
        while index < self.pendingEvents.count {
            let next = self.pendingEvents[index]
            index += 1
            for action in self.lifecycle.handle(next, link: self.linkView()) { self.perform(action) }
        }
        self.pendingEvents.removeAll(keepingCapacity: true)
    }

    /// What BlueZ's object cache says of the device now.
    func linkView() -> ConnectionLifecycle.LinkView {
        guard let api = self.api else { return ConnectionLifecycle.LinkView(bluezAvailable: false, exported: false) }
        let info = api.bluez.device(at: self.path)
        return ConnectionLifecycle.LinkView(bluezAvailable: api.bluez.isAvailable, exported: info != nil,
                                            connected: info?.connected == true,
                                            servicesResolved: info?.servicesResolved == true)
    }

    private func perform(_ action: ConnectionLifecycle.Action) {
        switch action {
        case .report(let status):
            self.deviceStatus = status
            self.delegate?.didUpdateDeviceStatus(status, for: self)
        case .connect(let attempt):
            self.counters.connectAttempts &+= 1
            self.callConnect(attempt: attempt)
        case .disconnect(let purpose):
            guard let api = self.api else {
                self.handle(.disconnectReplied(purpose, succeeded: false))
                return
            }
            api.bluez.disconnect(device: self.path) { [weak self] result in
                guard let self else { return }
                if case .success = result {
                    self.handle(.disconnectReplied(purpose, succeeded: true))
                } else {
                    self.handle(.disconnectReplied(purpose, succeeded: false))
                }
            }
        case .checkProfile(let attempt, let final):
            self.handle(.profileChecked(attempt: attempt, self.checkProfile(), final: final))
        case .subscribe(let attempt):
            self.subscribe(attempt: attempt)
        case .startSession(let attempt):
            self.startSession(attempt: attempt)
        case .sessionUp:
            self.lastError = nil
            self.connectedSince = Self.now()
            self.decoder.reset()
            self.readAtStart()
        case .closeStreams(let stopNotify):
            self.closeStreams(stopNotify: stopNotify)
        case .arm(let timer):
            self.arm(timer, after: self.duration(of: timer))
        case .armReconnect(let failures):
            guard let api = self.api else { return }
            let delay = Backoff.delay(failures: failures, initial: api.options.reconnectInitial,
                                      maximum: api.options.reconnectMax, using: &self.random)
            self.arm(.reconnect, after: delay)
        case .cancel(let timer):
            if let handle = self.timers.removeValue(forKey: timer) { self.api?.loop.cancel(handle) }
        case .attemptFailed(let error):
            self.lastError = error
            self.counters.connectFailures &+= 1
        case .linkLost:
            self.counters.linkLosses &+= 1
        case .connectionEnded:
            self.connectedSince = nil
        case .reconcileDiscovery:
            self.api?.reconcileDiscovery()
        }
    }

    private func callConnect(attempt: UInt64) {
        guard let api = self.api else { return }
        api.bluez.connect(device: self.path, timeout: api.options.connectTimeout) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success:
                self.handle(.connectReplied(attempt: attempt, .success))
            case .failure(let error) where error.name == BlueZNames.Error.inProgress:
                self.handle(.connectReplied(attempt: attempt, .inProgress))
            case .failure(let error):
                let failure = EmpaLinkError.bluez(name: error.name, message: error.message)
                self.handle(.connectReplied(attempt: attempt, .failure(failure)))
            }
        }
    }

    private func duration(of timer: ConnectionLifecycle.Timer) -> Duration {
        switch timer {
        case .deadline: return self.api?.options.connectTimeout ?? .seconds(20)
        case .profileSettle: return Self.profileSettleWait
        case .linkDown: return Self.linkDownWait
        case .reconnect: return self.api?.options.reconnectInitial ?? .seconds(1)
        }
    }

    private func arm(_ timer: ConnectionLifecycle.Timer, after delay: Duration) {
        guard let loop = self.api?.loop else { return }
        if let old = self.timers.removeValue(forKey: timer) { loop.cancel(old) }
        // Throws only once the loop is closed, when nothing runs any more.
        var handle: TimerHandle?
        handle = try? loop.scheduleTimer(after: delay) { [weak self] in
            guard let self, let handle, self.timers[timer] == handle else { return }
            self.timers[timer] = nil
            self.handle(.timerFired(timer))
        }
        self.timers[timer] = handle
    }

    // MARK: Events routed from the API

    func propertiesChanged(_ names: [String]) {
        let view = self.linkView()
        self.handle(.propertiesChanged(connectedBecameFalse: names.contains("Connected") && !view.connected))
    }

    /// New objects under the device (GATT services resolved) or the device itself reappeared.
    func objectsChanged() {
        self.handle(.objectsChanged)
    }

    func bluezRemoved() {
        self.handle(.deviceGone)
    }

    func bluezVanished() {
        self.handle(.deviceGone)
    }

    func bluezAvailable() {
        self.handle(.bluezAvailable(devicePresent: self.api?.bluez.device(at: self.path) != nil))
    }
}

extension EmpaLinkError {
    var isTimeout: Bool {
        if case .timedOut = self { return true }
        if case .bluez(let name, _) = self, name == DBusError.noReplyName { return true }
        return false
    }
}
