#if canImport(Glibc)
import Glibc
#endif
import DBus
import EventLoop
import Logging
import Posix

/// A BlueZ-compatible D-Bus service with simulated E4 wristbands (SPEC §13).
///
/// Two bus connections: one owns `org.bluez` and serves bluetoothd's objects (ObjectManager at `/`, `/org/bluez`,
/// adapters `hci0` … `hciN-1` (``SimulatedAdapter``, `--adapters N`), each with its own view of every device and
/// its GATT); the other owns `org.empalink.Simulator` and serves the control interface, so
/// that a simulated bluetoothd restart (the first connection closed and reopened with a new unique name) leaves
/// control reachable. Everything runs on one ``EventLoop`` thread: one repeating tick streams every device's
/// packets from its sample clocks, a 1 s tick drives advertising, RSSI and timeouts.
public final class Simulator {
    public static let busName = "org.bluez"
    public static let controlName = "org.empalink.Simulator"
    public static let controlPath = "/org/empalink/simulator"
    public static let controlInterface = "org.empalink.Simulator1"
    static let adapterPath = "/org/bluez/hci0"

    public let loop: EventLoop
    let busAddress: String
    let scenario: Scenario
    let logger: Logger
    let truthDirectory: String?
    /// Every adapter's view of every wristband: `hci0`'s first, in device order, then `hci1`'s, and so on.
    var devices: [SimulatedDevice] = []
    /// `hci0` … `hciN-1`.
    let adapters: [SimulatedAdapter]

    var bluez: DBusConnection?
    var control: DBusConnection?
    var nameOwnerSubscription: UInt64?

    var injected: [String: InjectedError] = [:]

    // Counters for Stats.
    var duplicateDataUses = 0
    var discoverableUses = 0
    var startDiscoveryCalls = 0
    var connectCalls = 0
    var restarts = 0
    var serviceUp = false
    var faultsApplied = 0
    /// Bus clients by unique name with `AcquireNotify` calls unanswered (``BluetoothdBehaviour/acquireNotifyMilliseconds``).
    var subscribing: [String: Int] = [:]
    /// Clients that left the bus while ``subscribing`` (bluetoothd 5.66 uses freed memory then: bluez/bluez#1784).
    var departedWhileSubscribing: Set<String> = []

    /// The clock's origin; a ward's boards share the ward's (``Ward/join(_:truths:)``).
    var startInstant: MonotonicInstant
    var startWall: Double
    /// The ward this simulator is one board of (`--ward`), and which; `nil` for a lone board (Simulator+Ward.swift).
    weak var ward: Ward?
    var boardIndex = 0
    var tickTimer: TimerHandle?
    var secondTimer: TimerHandle?
    var faultTimers: [TimerHandle] = []
    var restartTimer: TimerHandle?
    var truths: [Int: TruthRecorder] = [:]
    var stopped = false
    /// `[[hostile]]` behaviour by device index, and its timers (Simulator+Hostile.swift).
    var hostileDevices: [Int: HostileBehaviour] = [:]
    var hostileTimers: [TimerHandle] = []
    /// Whether `org.bluez` has changed owner mid-call (`owner_change_mid_call`, once per run).
    var ownerChangedMidCall = false
    /// `org.bluez` connections that lost the name mid-call and still hold a call (closed at ``stop()``).
    var staleOwners: [DBusConnection] = []
    /// Calls the stale owner never answers (`stale_reply = "never"`).
    var staleCalls: [DBusMethodCall] = []

    /// Creates the simulator; call ``start()`` on the loop's thread.
    ///
    /// - Parameters:
    ///   - busAddress: the D-Bus address to serve on.
    ///   - devices: how many wristbands (1…255), E4s unless the scenario's `[[device]] kind` says otherwise.
    ///   - heartRateStraps: how many heart-rate straps follow them (`--hrs N`), devices `devices + 1 …`.
    ///   - adapters: how many adapters the board has (`--adapters N`, 1…8), `hci0` … `hciN-1`.
    ///   - seed: the seed every signal and random choice derives from.
    ///   - scenario: timing, physiology and scheduled faults.
    ///   - truthDirectory: where to write the truth, or `nil`.
    ///   - loop: the loop everything runs on.
    ///   - logger: where events go.
    public init(busAddress: String, devices: Int, heartRateStraps: Int = 0, adapters: Int = 1, seed: UInt64,
                scenario: Scenario, truthDirectory: String?, loop: EventLoop, logger: Logger) {
        self.busAddress = busAddress
        self.scenario = scenario
        self.truthDirectory = truthDirectory
        self.loop = loop
        self.logger = logger
        self.startInstant = .now
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        self.startWall = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
        self.adapters = (0..<min(max(adapters, 1), SimulatedAdapter.maximum)).map(SimulatedAdapter.init(index:))
        let physiology = Simulator.physiology(devices: devices + heartRateStraps, seed: seed, scenario: scenario)
        for adapter in self.adapters {
            for (offset, parameters) in physiology.enumerated() {
                let index = offset + 1
                let kind = index > devices ? .hrs : scenario.kinds[index] ?? .e4
                self.devices.append(SimulatedDevice(index: index, seed: seed, physiology: parameters,
                                                    omitting: scenario.bluetoothd.omittedCharacteristics, kind: kind,
                                                    adapter: adapter.index, rssiOffset: adapter.rssiOffset))
            }
        }
    }

    /// One view of each wristband, `hci0`'s: what is counted, recorded and selected once per wristband.
    var wristbands: [SimulatedDevice] { self.devices.filter { $0.adapterIndex == 0 } }

    /// The adapter whose object `device` is.
    func adapter(of device: SimulatedDevice) -> SimulatedAdapter { self.adapters[device.adapterIndex] }

    /// The views of `device`'s wristband on the other adapters of this board.
    func siblings(of device: SimulatedDevice) -> [SimulatedDevice] {
        guard self.adapters.count > 1 else { return [] }
        return self.devices.filter { $0.index == device.index && $0 !== device }
    }

    /// The adapter of this board holding `device`'s wristband's radio link through another view, if any: the
    /// wristband takes one central and stops advertising while connected.
    func heldElsewhere(_ device: SimulatedDevice) -> SimulatedAdapter? {
        self.siblings(of: device).first { $0.linkUp }.map { self.adapter(of: $0) }
    }

    /// Each device's physiology (device k at offset k − 1): the scenario's, with heart rates drawn from its range
    /// in device order unless an override sets one. Shared with ``PeripheralSimulator`` so that its wristband is
    /// device 1 of the same seed.
    static func physiology(devices: Int, seed: UInt64, scenario: Scenario) -> [PhysiologyParameters] {
        var rates = SimRandom(seed: seed, 0xBEA7)
        var out: [PhysiologyParameters] = []
        for index in 1...max(1, min(devices, 255)) {
            var parameters = scenario.physiology
            if let range = scenario.heartRateRange {
                parameters.heartRate = rates.uniform(range)
            }
            if let override = scenario.devices[index] {
                let drawn = parameters.heartRate
                parameters = override
                if !scenario.explicitHeartRates.contains(index) && scenario.heartRateRange != nil {
                    parameters.heartRate = drawn
                }
            }
            out.append(parameters)
        }
        return out
    }

    /// Simulator seconds since start (monotonic).
    var now: Double {
        let elapsed = self.startInstant.duration(to: .now).components
        return Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
    }

    /// The wall-clock time of simulator time `t`.
    func wall(_ t: Double) -> Double { self.startWall + t }

    /// Connects to the bus, takes both names, exports the adapter and starts the ticks and scheduled faults.
    ///
    /// - Throws: ``SimulatorError`` when the bus cannot be reached or a name is taken.
    public func start() throws(SimulatorError) {
        self.loop.assertInEventLoop()
        if let directory = self.truthDirectory {
            for device in self.wristbands {
                do {
                    self.truths[device.index] = try TruthRecorder(directory: directory, serial: device.serial,
                                                                  kind: device.kind)
                } catch {
                    throw SimulatorError("cannot write truth to \(directory)/\(device.serial): \(error)")
                }
            }
        }
        do {
            let control = try DBusConnection.connect(address: self.busAddress, loop: self.loop)
            guard try control.requestName(Simulator.controlName) else {
                control.close()
                throw SimulatorError("\(Simulator.controlName) is already owned on \(self.busAddress)")
            }
            self.control = control
            try self.exportControl(on: control)
        } catch let error as SimulatorError {
            throw error
        } catch {
            throw SimulatorError("cannot connect to the bus at \(self.busAddress): \(error)")
        }
        try self.bringBlueZUp()
        do {
            let tick = Duration.milliseconds(self.scenario.timing.tickMilliseconds)
            self.tickTimer = try self.loop.scheduleTimer(after: tick, repeating: tick) { [weak self] in
                self?.streamTick()
            }
            self.secondTimer = try self.loop.scheduleTimer(after: .seconds(1), repeating: .seconds(1)) { [weak self] in
                self?.radioTick()
            }
            for fault in self.scenario.faults {
                let delay = Duration.microseconds(Int64(fault.at * 1e6))
                self.faultTimers.append(try self.loop.scheduleTimer(after: delay) { [weak self] in
                    self?.logger.info("scenario fault at \(fault.at) s: \(fault.action)")
                    _ = self?.apply(fault.action)
                })
            }
            try self.startHostile()
        } catch {
            throw SimulatorError("cannot schedule timers: \(error)")
        }
        self.logger.info("simulating \(self.wristbands.count) wristband(s) on \(self.busAddress)"
            + (self.adapters.count > 1 ? " with \(self.adapters.count) adapters" : ""))
    }

    /// Stops streaming, closes every fd and both connections, and flushes the truth.
    public func stop() {
        guard !self.stopped else { return }
        self.stopped = true
        let timers = [self.tickTimer, self.secondTimer, self.restartTimer] + self.adapters.map(\.powerTimer)
        for timer in timers.compactMap({ $0 }) {
            _ = self.loop.cancel(timer)
        }
        self.stopHostile()
        for timer in self.faultTimers { _ = self.loop.cancel(timer) }
        self.bringBlueZDown()
        for connection in self.staleOwners { connection.close() }
        self.staleOwners = []
        self.control?.close()
        self.control = nil
        for truth in self.truths.values { truth.flush() }
    }

    // MARK: The BlueZ face

    /// Opens the `org.bluez` connection and exports `/org/bluez` and the adapter (a bluetoothd start).
    ///
    /// - Parameter replacing: take the name from a connection of ours that still owns it (`owner_change_mid_call`).
    func bringBlueZUp(replacing: Bool = false) throws(SimulatorError) {
        let connection: DBusConnection
        // Only a scenario that changes the owner mid-call lets the name be taken over.
        let replaceable = self.scenario.hostile.contains { $0.ownerChangeMidCall != nil }
        do {
            connection = try DBusConnection.connect(address: self.busAddress, loop: self.loop)
            guard try connection.requestName(Simulator.busName, replaceExisting: replacing,
                                             allowReplacement: replaceable) else {
                connection.close()
                throw SimulatorError("\(Simulator.busName) is already owned on \(self.busAddress)")
            }
        } catch let error as SimulatorError {
            throw error
        } catch {
            throw SimulatorError("cannot connect to the bus at \(self.busAddress): \(error)")
        }
        self.bluez = connection
        self.serviceUp = true
        do {
            try connection.objects.addObjectManager(at: "/")
            try connection.objects.export("/org/bluez", interfaces: [
                DBusInterface(name: "org.bluez.AgentManager1", methods: [
                    DBusMethod("RegisterAgent", in: "os") { $0.reply() },
                    DBusMethod("UnregisterAgent", in: "o") { $0.reply() },
                    DBusMethod("RequestDefaultAgent", in: "o") { $0.reply() },
                ]),
            ])
            for adapter in self.adapters { try self.exportAdapter(adapter, on: connection) }
            self.nameOwnerSubscription = try connection.subscribe(
                DBusMatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
                              member: "NameOwnerChanged")
            ) { [weak self] message in
                guard let arguments = try? message.arguments(), arguments.count == 3,
                      let name = arguments[0].string, let newOwner = arguments[2].string,
                      name.hasPrefix(":"), newOwner.isEmpty else { return }
                self?.clientLeft(name)
            }
        } catch {
            throw SimulatorError("cannot export the BlueZ objects: \(error)")
        }
        connection.onDisconnect = { [weak self] in
            guard let self, self.bluez === connection else { return }
            self.logger.error("lost the bus connection of \(Simulator.busName)")
            self.bringBlueZDown()
        }
        self.logger.info("\(Simulator.busName) up as \(connection.uniqueName)")
    }

    /// Closes the `org.bluez` connection: every device is dropped, sessions, monitors and fds end, as when
    /// bluetoothd exits.
    ///
    /// - Parameter close: `false` keeps the connection open (it lost the name to another one and still holds a call).
    func bringBlueZDown(close: Bool = true) {
        guard let connection = self.bluez else { return }
        for device in self.devices {
            if device.state != .disconnected {
                self.dropConnection(device, reason: "bluetoothd stopped", emit: false)
            }
            device.exported = false
            device.rssiPresent = false
            device.gattExported = false
        }
        for adapter in self.adapters {
            self.stopDiscoveringClock(adapter)
            adapter.filters.removeAll()
            adapter.discoverySessions.removeAll()
            adapter.monitors.removeAll()
        }
        self.bluez = nil
        self.serviceUp = false
        connection.onDisconnect = nil
        if close { connection.close() }
    }

    /// A bus client went away: end its discovery session, filter, notify sessions and monitors.
    func clientLeft(_ name: String) {
        for adapter in self.adapters { adapter.filters[name] = nil }
        if self.subscribing[name] != nil {
            self.departedWhileSubscribing.insert(name)
            self.logger.warn(
                "client \(name) left the bus with AcquireNotify unanswered (bluetoothd 5.66 would use freed memory)")
        }
        for adapter in self.adapters {
            if let index = adapter.discoverySessions.firstIndex(of: name) {
                adapter.discoverySessions.remove(at: index)
                self.logger.debug("discovery client \(name) left the bus")
                self.updateDiscovering(adapter)
            }
            adapter.monitors.removeAll { $0.owner == name }
        }
        for device in self.devices {
            for characteristic in device.characteristics where characteristic.notifyOwner == name {
                self.releaseNotifyFD(characteristic, emit: true)
            }
            for characteristic in device.characteristics where characteristic.notifyClients.contains(name) {
                characteristic.notifyClients.removeAll { $0 == name }
                if characteristic.notifyClients.isEmpty && characteristic.notifyFD == nil {
                    self.setCharacteristic(characteristic, "Notifying", .boolean(false))
                }
            }
        }
    }

    /// Answers `call` with an armed error for `method`, if any.
    ///
    /// - Returns: whether the call was answered.
    func failIfInjected(_ call: DBusMethodCall, _ method: String) -> Bool {
        guard var armed = self.injected[method] else { return false }
        armed.remaining -= 1
        self.injected[method] = armed.remaining > 0 ? armed : nil
        self.logger.info("injected error for \(method): \(armed.error)")
        call.fail(armed.error)
        return true
    }

    /// Sets a property on the BlueZ face (no-op while it is down).
    ///
    /// - Parameter emit: whether a change is signalled; bluetoothd leaves some changes unsignalled.
    func setProperty(_ path: String, _ interface: String, _ name: String, _ value: DBusValue?, emit: Bool = true) {
        self.bluez?.objects.setProperty(path, interface: interface, name: name, value: value, emit: emit)
    }

    func setCharacteristic(_ characteristic: SimulatedCharacteristic, _ name: String, _ value: DBusValue?,
                           emit: Bool = true) {
        self.setProperty(characteristic.path, "org.bluez.GattCharacteristic1", name, value, emit: emit)
    }

    /// Emits one `PropertiesChanged` with several values (already stored with `emit: false`), or with values that
    /// did not change, as bluetoothd sometimes does; nothing when `changed` is empty or the face is down.
    func emitPropertiesChanged(_ path: String, _ interface: String, _ changed: [(String, DBusValue)]) {
        guard !changed.isEmpty, let connection = self.bluez else { return }
        try? connection.emitSignal(path: path, interface: "org.freedesktop.DBus.Properties",
                                   member: "PropertiesChanged",
                                   arguments: [.string(interface), .properties(changed), .strings([])])
    }

    /// Runs `work` after `milliseconds` on the loop (a realistic radio or bluetoothd delay).
    @discardableResult
    func after(milliseconds: Int, _ work: @escaping () -> Void) -> TimerHandle? {
        try? self.loop.scheduleTimer(after: .milliseconds(max(milliseconds, 0)), handler: work)
    }

    /// The devices a control or scenario selector names: `""`/`"*"` all, else an address, serial or 1-based index.
    func devices(matching selector: String) -> [SimulatedDevice] {
        if selector.isEmpty || selector == "*" { return self.devices }
        let lowered = selector.lowercased()
        return self.devices.filter {
            $0.addressString.lowercased() == lowered || $0.serial == lowered || String($0.index) == selector
        }
    }
}
