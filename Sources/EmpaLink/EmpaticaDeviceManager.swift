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
    public private(set) var name: String
    public private(set) var rssi: Int?
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
    /// `connect` was called and `disconnect` was not.
    var wantsConnection = false

    /// Whether the device is meant to be connected (``connect(delegate:)`` called, ``disconnect()`` not):
    /// it is connected, connecting, or waiting to reconnect.
    public var isConnectionWanted: Bool { self.wantsConnection }
    /// Whether BlueZ reports a link to the device now — ours, or another central's on this adapter (a second
    /// connection to a device already connected would break both).
    public var isLinkUp: Bool { self.api?.bluez.device(at: self.path)?.connected == true }

    /// Whether BlueZ currently has an object for this device.
    var present = true
    var attempt: UInt64 = 0
    /// Consecutive failures, for the backoff.
    var failures = 0
    var reconnectTimer: TimerHandle?
    var deadline: TimerHandle?
    /// The step the current attempt is at, or the release of a failed one's link.
    var phase = ConnectionPhase.idle
    /// This attempt's `Connect` succeeded: BlueZ holds a link for us even if it never signalled `Connected`. A
    /// property of the link rather than a step: it holds from `Connect`'s answer through every later step.
    var linkRequested = false
    /// Runs once the characteristics present stop changing while only optional ones are missing.
    var profileSettle: TimerHandle?
    var streams: [NotificationStream] = []
    /// Characteristics subscribed through StartNotify, by path, with their channel.
    var valueSubscriptions: [String: Int] = [:]
    /// The profile's characteristics, by channel (read once: a profile may compute them).
    let channels: [ProfileCharacteristic]
    let decoder: any ProfileDecoder
    var random = SystemRandomNumberGenerator()

    init(api: EmpaticaAPI, path: String, address: BluetoothAddress, info: BlueZDeviceInfo,
         profile: any DeviceProfile) {
        self.api = api
        self.path = path
        self.address = address
        self.profile = profile
        self.channels = profile.characteristics
        self.decoder = profile.makeDecoder()
        self.name = info.name ?? profile.displayName
        self.rssi = Self.reportedRSSI(info.rssi)
    }

    /// Decoder statistics summed over the streams (received, lost, duplicates, decode errors).
    public var statistics: DecoderStatistics { self.decoder.statistics }

    /// Timestamp re-anchors (SPEC §8).
    public var clockReanchors: UInt64 { self.decoder.reanchors }

    func update(_ info: BlueZDeviceInfo) {
        if let name = info.name { self.name = name }
        self.rssi = Self.reportedRSSI(info.rssi)
        self.present = true
    }

    /// HCI's 127 means "RSSI not available" (bluetoothd passes it on as a value): reported as unknown.
    static func reportedRSSI(_ rssi: Int?) -> Int? {
        rssi == 127 ? nil : rssi
    }

    func setStatus(_ status: DeviceStatus) {
        guard status != self.deviceStatus else { return }
        self.deviceStatus = status
        self.delegate?.didUpdateDeviceStatus(status, for: self)
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
        guard !self.wantsConnection else { return }
        self.wantsConnection = true
        self.failures = 0
        self.startAttempt()
    }

    /// How long a disconnect — ours, or the release of a failed attempt's link — waits, after bluetoothd answered
    /// `Disconnect`, for the link's `Connected = false` before it takes the link for down anyway (bluetoothd may never
    /// have signalled `Connected = true`, and then signals no `false` either).
    static let linkDownWait: Duration = .seconds(2)

    /// Disconnects and stops reconnecting. No effect when not connected.
    ///
    /// The device is `.disconnecting` until the link is down: bluetoothd answers `Disconnect` before it signals
    /// `Connected = false` (`device_remove_connection`), and an attempt started in between — a
    /// ``connect(delegate:)`` made meanwhile, or from `didUpdateDeviceStatus(.disconnected)` — would find the old
    /// link still up and be ended by that late signal.
    public func disconnect() {
        self.wantsConnection = false
        guard self.deviceStatus != .disconnected else {
            // No reconnect either. A failed attempt's release goes on (its wait is ``deadline``) and then finds no
            // connection wanted.
            if let timer = self.reconnectTimer { self.api?.loop.cancel(timer) }
            self.reconnectTimer = nil
            return
        }
        self.cancelTimers()
        let info = self.api?.bluez.device(at: self.path)
        // Whether BlueZ holds a link whose `Connected = false` is still to come (bluetoothd 5.66 may not have
        // signalled `Connected = true` for it: see ``linkRequested``).
        let heldLink = self.deviceStatus == .connected || self.linkRequested || info?.connected == true
            || info?.servicesResolved == true
        self.phase = .idle
        self.setStatus(.disconnecting)
        self.closeStreams()
        guard let api = self.api else {
            self.setStatus(.disconnected)
            return
        }
        api.bluez.disconnect(device: self.path) { [weak self] result in
            guard let self, self.deviceStatus == .disconnecting else { return }
            guard case .success = result, heldLink, self.waitForLinkDown(then: { $0.finishIfDisconnecting() })
            else {
                self.finishDisconnect()
                return
            }
        }
    }

    private func finishIfDisconnecting() {
        if self.deviceStatus == .disconnecting { self.finishDisconnect() }
    }

    /// After bluetoothd answered `Disconnect` for a link it held: `Connected = false` is still to come (see
    /// ``propertiesChanged(_:)``), and if it does not come within ``linkDownWait`` the link is taken for down and
    /// `done` runs. Returns `false` when there is nothing to wait for (the device object is gone, or no timer).
    func waitForLinkDown(then done: @escaping (EmpaticaDeviceManager) -> Void) -> Bool {
        guard let api = self.api, api.bluez.device(at: self.path) != nil else { return false }
        self.deadline = try? api.loop.scheduleTimer(after: Self.linkDownWait) { [weak self] in
            guard let self else { return }
            self.deadline = nil
            done(self)
        }
        return self.deadline != nil
    }

    /// Our ``disconnect()`` is done: the link is down (`Connected = false`, or the `Disconnect` left nothing to wait
    /// for). A ``connect(delegate:)`` made meanwhile (a reload that removed and re-added the serial) found the device
    /// disconnecting; it starts now.
    func finishDisconnect() {
        if let timer = self.deadline { self.api?.loop.cancel(timer) }
        self.deadline = nil
        self.connectedSince = nil
        self.setStatus(.disconnected)
        self.api?.reconcileDiscovery()
        self.startAttempt()
    }

    // MARK: Connection attempts

    func startAttempt() {
        guard self.wantsConnection, self.deviceStatus == .disconnected, self.reconnectTimer == nil,
              let api = self.api else { return }
        if self.phase.releaseRetry != nil {
            self.phase.retryAfterRelease()
            return
        }
        guard api.bluez.isAvailable, self.present, api.bluez.device(at: self.path) != nil else {
            // Wait for BlueZ or for the device to be discovered again (see bluezAvailable / objectsChanged).
            return
        }
        self.attempt &+= 1
        self.phase = .linking
        self.linkRequested = false
        self.counters.connectAttempts &+= 1
        let attempt = self.attempt
        self.setStatus(.connecting)
        self.armDeadline(attempt: attempt, finalSubscribe: true)
        api.bluez.connect(device: self.path, timeout: api.options.connectTimeout) { [weak self] result in
            guard let self, self.attempt == attempt, self.deviceStatus == .connecting else { return }
            switch result {
            case .success:
                self.linkRequested = true
                self.connectedAtLinkLevel()
            case .failure(let error) where error.name == BlueZNames.Error.inProgress:
                // BlueZ is already connecting this device (another client, or our earlier attempt): wait for
                // Connected/ServicesResolved under the same deadline.
                self.phase = .resolvingServices
            case .failure(let error):
                self.attemptFailed(.bluez(name: error.name, message: error.message))
            }
        }
    }

    /// Fails the attempt after the connect timeout. If services resolved but part of the profile never appeared
    /// by then (`finalSubscribe`), it goes on with what is there, or fails when the command or BVP is missing,
    /// under a second deadline of the same length.
    func armDeadline(attempt: UInt64, finalSubscribe: Bool) {
        guard let api = self.api else { return }
        self.deadline = try? api.loop.scheduleTimer(after: api.options.connectTimeout) { [weak self] in
            guard let self, self.attempt == attempt, self.deviceStatus == .connecting else { return }
            self.deadline = nil
            if finalSubscribe, self.phase.isAwaitingProfile {
                self.armDeadline(attempt: attempt, finalSubscribe: false)
                self.subscribe(final: true)
            } else {
                self.attemptFailed(.timedOut("connecting to \(self.serialNumber)"))
            }
        }
    }

    func connectedAtLinkLevel() {
        guard let info = self.api?.bluez.device(at: self.path) else { return }
        if info.servicesResolved {
            self.subscribe()
        } else {
            self.phase = .resolvingServices
        }
    }

    func attemptFailed(_ error: EmpaLinkError) {
        self.lastError = error
        self.counters.connectFailures &+= 1
        self.failures += 1
        self.cancelTimers()
        self.closeStreams()
        self.phase = .idle
        // Leave BlueZ in a clean state: an attempt that timed out may still be connecting, and one that failed
        // after `Connect` succeeded holds a link whose `Connected = true` bluetoothd may never have signalled.
        // The next attempt waits for that `Disconnect` to finish: a `Connect` before it would find the old link
        // still up and reuse it, and its late `Connected = false` would end the new attempt.
        let info = self.api?.bluez.device(at: self.path)
        self.connectedSince = nil
        if let api = self.api, info?.connected == true || info?.servicesResolved == true || self.linkRequested
            || error.isTimeout
        {
            self.linkRequested = false
            self.phase = .releasing(retry: false, linkDown: false)
            self.setStatus(.disconnected)
            api.bluez.disconnect(device: self.path) { [weak self] result in
                guard let self, case .releasing(let retry, let linkDown) = self.phase else { return }
                // bluetoothd answers before it signals `Connected = false`: wait for the signal (or a while).
                guard case .success = result, !linkDown, self.waitForLinkDown(then: { $0.endRelease() }) else {
                    self.endRelease()
                    return
                }
                self.phase = .awaitingLinkDown(retry: retry)
            }
            return
        }
        self.setStatus(.disconnected)
        self.scheduleReconnect()
    }

    /// A failed attempt's link is down (or given up on): the attempt asked for meanwhile starts, or the backoff runs.
    func endRelease() {
        guard let retry = self.phase.releaseRetry else { return }
        if let timer = self.deadline { self.api?.loop.cancel(timer) }
        self.deadline = nil
        self.phase = .idle
        guard self.deviceStatus == .disconnected, self.reconnectTimer == nil else { return }
        if retry {
            self.startAttempt()
        } else {
            self.scheduleReconnect()
        }
    }

    /// The link went down after it was up (Connected=false, a notification socket hung up, or the object vanished).
    func linkLost() {
        guard self.deviceStatus == .connected || self.deviceStatus == .connecting else { return }
        if self.deviceStatus == .connected { self.counters.linkLosses &+= 1 }
        self.cancelTimers()
        self.closeStreams()
        self.phase = .idle
        self.connectedSince = nil
        self.setStatus(.disconnected)
        self.failures = 0
        self.scheduleReconnect()
        self.api?.reconcileDiscovery()
    }

    func scheduleReconnect() {
        guard self.wantsConnection, self.options.autoReconnect, let api = self.api else {
            self.wantsConnection = self.wantsConnection && self.options.autoReconnect
            return
        }
        let delay = Backoff.delay(failures: self.failures, initial: api.options.reconnectInitial,
                                  maximum: api.options.reconnectMax, using: &self.random)
        self.reconnectTimer = try? api.loop.scheduleTimer(after: delay) { [weak self] in
            guard let self else { return }
            self.reconnectTimer = nil
            self.startAttempt()
        }
    }

    func cancelTimers() {
        guard let loop = self.api?.loop else { return }
        if let timer = self.reconnectTimer { loop.cancel(timer) }
        if let timer = self.deadline { loop.cancel(timer) }
        if let timer = self.profileSettle { loop.cancel(timer) }
        self.reconnectTimer = nil
        self.deadline = nil
        self.profileSettle = nil
    }

    // MARK: Events routed from the API

    func propertiesChanged(_ names: [String]) {
        guard let info = self.api?.bluez.device(at: self.path) else { return }
        if names.contains("Connected"), !info.connected {
            switch (self.deviceStatus, self.phase) {
            case (.disconnecting, _):
                self.finishDisconnect()
            case (.disconnected, .releasing(let retry, _)):
                self.phase = .releasing(retry: retry, linkDown: true)
            case (.disconnected, .awaitingLinkDown):
                self.endRelease()
            default:
                self.linkLost()
            }
            return
        }
        // Not `info.connected`: bluetoothd 5.66 never signals `Connected = true` for an LE link it opened when the
        // ATT channel came up before the kernel's "device connected" event (seen with real bluetoothd, see
        // Docs/simulator.md), while `ServicesResolved = true` only ever happens on a live link.
        if self.phase == .resolvingServices, self.deviceStatus == .connecting, info.servicesResolved {
            self.subscribe()
        }
    }

    /// New objects under the device (GATT services resolved) or the device itself reappeared.
    func objectsChanged() {
        switch self.deviceStatus {
        case .disconnected:
            self.startAttempt()
        case .connecting where self.phase.isAwaitingProfile:
            self.subscribe()
        default:
            break
        }
    }

    func bluezRemoved() {
        self.present = false
        self.linkGone()
    }

    func bluezVanished() {
        self.present = false
        self.linkGone()
    }

    /// The device object or BlueZ itself is gone: no link is left, ours to finish disconnecting or lost.
    private func linkGone() {
        if self.deviceStatus == .disconnecting {
            self.finishDisconnect()
        } else {
            self.linkLost()
        }
    }

    func bluezAvailable() {
        self.present = self.api?.bluez.device(at: self.path) != nil
        self.startAttempt()
    }
}

extension EmpaLinkError {
    var isTimeout: Bool {
        if case .timedOut = self { return true }
        if case .bluez(let name, _) = self, name == DBusError.noReplyName { return true }
        return false
    }
}
