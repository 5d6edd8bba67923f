#if canImport(Glibc)
import Glibc
#endif
import DBus
import E4
import EventLoop
import Logging
import Posix

/// The simulator's peripheral face (SPEC §13): one simulated E4 served as a GATT application of a real bluetoothd
/// (`GattManager1.RegisterApplication`) and advertised through `LEAdvertisingManager1`, so that a central reaches
/// it over a real (or `btvirt` virtual) radio.
///
/// Unlike ``Simulator``, which *is* bluetoothd on a private bus, this is a bluetoothd *client*: it exports an
/// application object tree (ObjectManager at ``appRoot``) and an `LEAdvertisement1`, waits for the adapter to be
/// present and powered, registers both, and re-registers when bluetoothd restarts. bluetoothd calls back into the
/// tree when the central reads, writes or subscribes. The wristband streams the same packets and truth as the
/// central face (``PacketEmitter``) after the start command, for as long as its central stays connected.
///
/// Everything runs on one ``EventLoop`` thread.
public final class PeripheralSimulator {
    /// Root of the exported GATT application (the path given to `RegisterApplication`).
    static let appRoot = "/org/empalink/peripheral"
    /// The advertisement object, outside the application's tree so bluetoothd's GATT client never sees it.
    static let advertisementPath = "/org/empalink/advertisement0"
    static let bluezName = "org.bluez"
    static let adapterInterface = "org.bluez.Adapter1"
    static let deviceInterface = "org.bluez.Device1"
    static let gattManagerInterface = "org.bluez.GattManager1"
    static let advertisingManagerInterface = "org.bluez.LEAdvertisingManager1"
    static let serviceInterface = "org.bluez.GattService1"
    static let characteristicInterface = "org.bluez.GattCharacteristic1"
    static let advertisementInterface = "org.bluez.LEAdvertisement1"
    static let propertiesInterface = "org.freedesktop.DBus.Properties"
    static let objectManagerInterface = "org.freedesktop.DBus.ObjectManager"
    /// The ATT MTU assumed when bluetoothd does not say: the default, enough for 20-byte notifications.
    static let defaultMTU: UInt16 = 23

    public let loop: EventLoop
    let busAddress: String
    /// `hci0`, …
    let adapterName: String
    let adapterPath: String
    let seed: UInt64
    let scenario: Scenario
    let truthDirectory: String?
    let logger: Logger
    /// How long to wait for bluetoothd, the adapter and its power before giving up.
    let adapterTimeout: Duration
    /// The bound of every method call to bluetoothd.
    let callTimeout: Duration

    /// Called once when the peripheral cannot go on (registration refused, adapter absent too long, bus lost);
    /// the peripheral has stopped serving by then. The command prints the message and exits 1.
    public var onFailure: ((SimulatorError) -> Void)?

    var connection: DBusConnection?
    /// The characteristics of the exported tree (their object paths are the application's).
    let characteristics: [SimulatedCharacteristic]
    /// An E4, or a heart-rate strap (`--devices 0 --hrs 1`).
    let kind: SimulatedDeviceKind
    /// The wristband, created once the adapter's address (its identity) is known.
    var device: SimulatedDevice?
    var truths: [Int: TruthRecorder] = [:]

    var registration = PeripheralRegistration.waitingForBlueZ
    /// Bumped whenever bluetoothd or the adapter goes away, so replies to calls of an earlier round are ignored.
    var generation = 0
    var deadline: TimerHandle?
    var tickTimer: TimerHandle?
    var subscriptions: [UInt64] = []
    var ownerWatch: UInt64?
    /// Interfaces bluetoothd announced on the adapter object: `GattManager1` comes with `Adapter1`,
    /// `LEAdvertisingManager1` only once the kernel reported its advertising features.
    var adapterInterfaces: Set<String> = []
    var adapterPowered = false
    // Each step is asked for once per appearance of the adapter.
    var powerRequested = false
    var applicationRequested = false
    var applicationRegistered = false
    var advertisementRequested = false
    var advertisementRegistered = false

    /// Connected centrals on our adapter: Device1 object path → address.
    var centrals: [String: String] = [:]
    /// The Device1 path of the central that started the running session, when bluetoothd said (`device` option).
    var sessionCentral: String?
    /// ``onFailure`` was called.
    var failed = false
    var stopped = false

    let startInstant: MonotonicInstant
    let startWall: Double

    /// Creates the peripheral; call ``start()`` on the loop's thread.
    ///
    /// - Parameters:
    ///   - busAddress: the bus bluetoothd is on (normally the system bus).
    ///   - adapter: the adapter's name, e.g. `hci0`.
    ///   - seed: the seed of the physiology (the wristband is device 1 of that seed).
    ///   - scenario: timing (the streaming tick) and physiology; its faults are not used in this mode.
    ///   - truthDirectory: where to write the truth (`DIR/<serial>/`), or `nil`.
    ///   - adapterTimeout: how long to wait for bluetoothd, the adapter and power before failing.
    ///   - callTimeout: the bound of each call to bluetoothd.
    ///   - loop: the loop everything runs on.
    ///   - logger: where events go.
    ///   - kind: an E4 (the default) or a heart-rate strap.
    public init(busAddress: String, adapter: String, seed: UInt64, scenario: Scenario, truthDirectory: String?,
                adapterTimeout: Duration = .seconds(30), callTimeout: Duration = .seconds(25), loop: EventLoop,
                logger: Logger, kind: SimulatedDeviceKind = .e4) {
        self.kind = kind
        self.busAddress = busAddress
        self.adapterName = adapter
        self.adapterPath = "/org/bluez/" + adapter
        self.seed = seed
        self.scenario = scenario
        self.truthDirectory = truthDirectory
        self.adapterTimeout = adapterTimeout
        self.callTimeout = callTimeout
        self.loop = loop
        self.logger = logger
        // A partial profile is the wristband's, not bluetoothd's: the peripheral face leaves the same ones out.
        self.characteristics = kind == .e4
            ? SimulatedDevice.makeCharacteristics(devicePath: PeripheralSimulator.appRoot,
                                                  omitting: scenario.bluetoothd.omittedCharacteristics)
            : SimulatedDevice.makeHeartRateCharacteristics(devicePath: PeripheralSimulator.appRoot)
        self.startInstant = .now
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        self.startWall = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// Simulator seconds since start (monotonic).
    var now: Double {
        let elapsed = self.startInstant.duration(to: .now).components
        return Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
    }

    /// The wall-clock time of simulator time `t`.
    func wall(_ t: Double) -> Double { self.startWall + t }

    /// Connects to the bus, exports the application and starts waiting for bluetoothd and the adapter.
    ///
    /// Registration happens later, on the loop; its failure arrives through ``onFailure``.
    ///
    /// - Throws: ``SimulatorError`` when the bus cannot be reached or the objects cannot be exported.
    public func start() throws(SimulatorError) {
        self.loop.assertInEventLoop()
        if !self.scenario.faults.isEmpty {
            self.logger.warn("the scenario's faults are not used with --peripheral (the radio is real)")
        }
        let connection: DBusConnection
        do {
            connection = try DBusConnection.connect(address: self.busAddress, loop: self.loop)
        } catch {
            throw SimulatorError("cannot connect to the bus at \(self.busAddress): \(error)")
        }
        self.connection = connection
        do {
            try self.exportApplication(on: connection)
            try self.watchBlueZ(on: connection)
            let tick = Duration.milliseconds(self.scenario.timing.tickMilliseconds)
            self.tickTimer = try self.loop.scheduleTimer(after: tick, repeating: tick) { [weak self] in
                self?.streamTick()
            }
        } catch let error as SimulatorError {
            throw error
        } catch {
            throw SimulatorError("cannot set up the peripheral: \(error)")
        }
        connection.onDisconnect = { [weak self] in
            guard let self, !self.stopped else { return }
            self.fail("lost the connection to the bus at \(self.busAddress)")
        }
        self.armDeadline()
        self.logger.info("peripheral on \(self.adapterName): waiting for bluetoothd and the adapter")
    }

    /// Stops streaming, closes every fd and the connection, and flushes the truth.
    public func stop() {
        guard !self.stopped else { return }
        self.stopped = true
        self.stopSession(reason: "the peripheral stopped")
        for timer in [self.deadline, self.tickTimer].compactMap({ $0 }) { _ = self.loop.cancel(timer) }
        self.deadline = nil
        self.tickTimer = nil
        if let connection = self.connection {
            // No Unregister calls: bluetoothd drops the application and the advertisement of a client that leaves
            // the bus (gatt-database.c and advertising.c watch the owner), which closing the connection does.
            for characteristic in self.characteristics { self.releaseNotifyFD(characteristic, emit: false) }
            connection.onDisconnect = nil
            connection.close()
        }
        self.connection = nil
        for truth in self.truths.values { truth.flush() }
    }

    /// Reports a failure once and stops, on a later loop pass: failures arrive inside libdbus's dispatch (a reply,
    /// a disconnect), where closing the connection would dispatch again and deadlock.
    func fail(_ message: String) {
        guard !self.failed, !self.stopped else { return }
        self.failed = true
        let stopAndReport = { [weak self] in
            guard let self else { return }
            self.stop()
            self.onFailure?(SimulatorError(message))
        }
        do {
            _ = try self.loop.scheduleTimer(after: .zero, handler: stopAndReport)
        } catch {
            stopAndReport()
        }
    }

    /// (Re)starts the countdown to failure while bluetoothd, the adapter or its power is missing.
    func armDeadline() {
        if let deadline = self.deadline { _ = self.loop.cancel(deadline) }
        self.deadline = try? self.loop.scheduleTimer(after: self.adapterTimeout) { [weak self] in
            guard let self else { return }
            self.deadline = nil
            let missing = [PeripheralSimulator.gattManagerInterface, PeripheralSimulator.advertisingManagerInterface]
                .first { !self.adapterInterfaces.contains($0) }
            self.fail(self.registration.timeoutMessage(adapter: self.adapterName, after: self.adapterTimeout,
                                                       missing: missing))
        }
    }

    func disarmDeadline() {
        if let deadline = self.deadline { _ = self.loop.cancel(deadline) }
        self.deadline = nil
    }

    /// The characteristic with a 16-bit UUID.
    func characteristic(_ uuid16: UInt16) -> SimulatedCharacteristic? {
        self.characteristics.first { $0.uuid16 == uuid16 }
    }
}
