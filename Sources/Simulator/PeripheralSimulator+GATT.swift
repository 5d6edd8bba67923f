#if canImport(Glibc)
import Glibc
#endif
import DBus
import E4
import Posix

/// The exported GATT application (SPEC §6) in the shapes bluetoothd's `gatt-database.c` reads, and the methods it
/// calls when a central reads, writes or subscribes.
///
/// bluetoothd reads the tree once with `GetManagedObjects` at ``appRoot``: `GattService1` needs `UUID` and
/// `Primary`, `GattCharacteristic1` needs `UUID`, `Service` and `Flags` (no `Handle`: bluetoothd assigns them). A
/// notifying characteristic that has a `NotifyAcquired` property is subscribed with `AcquireNotify` (one fd,
/// bluetoothd reads one notification per `read`), otherwise with `StartNotify` and `PropertiesChanged(Value)`; we
/// offer both. bluetoothd turns our error names into ATT errors: `NotPermitted` → read/write not permitted,
/// `InvalidValueLength` → invalid attribute value length, `InvalidOffset` → invalid offset, `Failed` → 0x80.
extension PeripheralSimulator {
    func exportApplication(on connection: DBusConnection) throws(DBusError) {
        try connection.objects.addObjectManager(at: PeripheralSimulator.appRoot)
        let services = self.kind == .e4 ? SimulatedDevice.makeServices(devicePath: PeripheralSimulator.appRoot)
            : SimulatedDevice.makeHeartRateServices(devicePath: PeripheralSimulator.appRoot)
        for service in services {
            try connection.objects.export(service.path, interfaces: [
                DBusInterface(name: PeripheralSimulator.serviceInterface, properties: [
                    ("UUID", DBusProperty(.string(SimulatedCharacteristic.uuid128(service.uuid16)))),
                    ("Primary", DBusProperty(.boolean(true))),
                ]),
            ])
        }
        for characteristic in self.characteristics {
            try connection.objects.export(characteristic.path, interfaces: [self.interface(of: characteristic)])
        }
    }

    func interface(of characteristic: SimulatedCharacteristic) -> DBusInterface {
        var properties: [(String, DBusProperty)] = [
            ("UUID", DBusProperty(.string(characteristic.uuidString))),
            ("Service", DBusProperty(.objectPath(characteristic.servicePath))),
            ("Flags", DBusProperty(.strings(characteristic.flags))),
        ]
        if characteristic.canRead || characteristic.canNotify {
            properties.append(("Value", DBusProperty(.bytes([]))))
        }
        if characteristic.canNotify {
            properties.append(("Notifying", DBusProperty(.boolean(false))))
            // Its presence is what makes bluetoothd subscribe with AcquireNotify (gatt-database.c, ccc_write_cb).
            properties.append(("NotifyAcquired", DBusProperty(.boolean(false))))
        }
        return DBusInterface(name: PeripheralSimulator.characteristicInterface, properties: properties, methods: [
            DBusMethod("ReadValue", in: "a{sv}", out: "ay") { [weak self] call in
                self?.readValue(characteristic, call)
            },
            DBusMethod("WriteValue", in: "aya{sv}") { [weak self] call in
                self?.writeValue(characteristic, call)
            },
            DBusMethod("AcquireNotify", in: "a{sv}", out: "hq") { [weak self] call in
                self?.acquireNotify(characteristic, call)
            },
            DBusMethod("StartNotify") { [weak self] call in
                self?.startNotify(characteristic, call)
            },
            DBusMethod("StopNotify") { [weak self] call in
                self?.stopNotify(characteristic, call)
            },
            DBusMethod("Confirm") { call in call.reply() },
        ])
    }

    func setCharacteristic(_ characteristic: SimulatedCharacteristic, _ name: String, _ value: DBusValue,
                           emit: Bool = true) {
        self.connection?.objects.setProperty(characteristic.path,
                                             interface: PeripheralSimulator.characteristicInterface, name: name,
                                             value: value, emit: emit)
    }

    /// `btd_error_invalid_offset`, which bluetoothd maps to the ATT error Invalid Offset.
    static var invalidOffset: DBusError {
        DBusError(name: BlueZError.prefix + "InvalidOffset", message: "Invalid offset")
    }

    /// The `offset` option bluetoothd adds for long reads and prepared writes (absent means 0).
    static func offset(_ options: [String: DBusValue]) -> Int {
        Int(clamping: options["offset"]?.int64 ?? 0)
    }

    func readValue(_ characteristic: SimulatedCharacteristic, _ call: DBusMethodCall) {
        guard characteristic.canRead else { return call.fail(BlueZError.notPermitted("Read not permitted")) }
        guard let device = self.device else { return call.fail(BlueZError.failed("Not ready")) }
        let value = device.readValue(characteristic, at: self.now)
        let offset = PeripheralSimulator.offset(call.arguments[0].stringKeyed ?? [:])
        guard offset >= 0, offset <= value.count else { return call.fail(PeripheralSimulator.invalidOffset) }
        // Not announced: bluetoothd sends every PropertiesChanged(Value) of a notifying characteristic as a
        // notification, and a read is not one.
        self.setCharacteristic(characteristic, "Value", .bytes(value), emit: false)
        call.reply([.bytes(Array(value[offset...]))])
    }

    func writeValue(_ characteristic: SimulatedCharacteristic, _ call: DBusMethodCall) {
        guard characteristic.canWrite else { return call.fail(BlueZError.notPermitted("Write not permitted")) }
        let options = call.arguments[1].stringKeyed ?? [:]
        guard PeripheralSimulator.offset(options) == 0 else { return call.fail(PeripheralSimulator.invalidOffset) }
        let bytes = call.arguments[0].bytes ?? []
        let decoded = bytes.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Result<E4Command, E4DecodeError> in
            do throws(E4DecodeError) {
                return .success(try E4Command.decode(raw))
            } catch {
                return .failure(error)
            }
        }
        switch decoded {
        case .success(.start(let unixTime)):
            guard self.device != nil else { return call.fail(BlueZError.failed("Not ready")) }
            let central = options["device"]?.string
            if let central, self.isBelowAdapter(central) {
                self.centralConnected(central, address: nil)
            }
            self.logger.info("start command (device clock \(unixTime)) from "
                             + (central.map(PeripheralSimulator.address(fromDevicePath:)) ?? "a local client"))
            self.startSession(central: central)
            call.reply()
        case .failure(.wrongLength), .failure(.tooShort):
            call.fail(BlueZError.invalidValueLength)
        case .failure(let error):
            call.fail(BlueZError.failed("Unknown command: \(error)"))
        }
    }

    func acquireNotify(_ characteristic: SimulatedCharacteristic, _ call: DBusMethodCall) {
        guard characteristic.canNotify else { return call.fail(BlueZError.notSupported) }
        guard characteristic.notifyFD == nil else { return call.fail(BlueZError.notPermitted("Notify acquired")) }
        guard characteristic.notifyClients.isEmpty else { return call.fail(BlueZError.inProgress) }
        let options = call.arguments[0].stringKeyed ?? [:]
        let mtu = options["mtu"]?.int64.map { UInt16(clamping: $0) } ?? PeripheralSimulator.defaultMTU
        let theirs: FileDescriptor
        switch characteristic.openNotifySocket(owner: call.sender, on: self.loop, onEvent: { [weak self] in
            self?.notifySocketEvent($0)
        }) {
        case .success(let descriptor): theirs = descriptor
        case .failure(let error): return call.fail(error)
        }
        call.reply([.unixFD(theirs.rawValue), .uint16(mtu)])
        // D-Bus sent a duplicate; bluetoothd owns that one.
        theirs.close()
        self.setCharacteristic(characteristic, "NotifyAcquired", .boolean(true))
        self.strapSubscribed(characteristic)
        self.logger.debug(
            "notifications of \(SimulatedCharacteristic.hex4(characteristic.uuid16)) acquired (MTU \(mtu))")
    }

    /// Our end of an acquired socket became readable or hung up: bluetoothd closed its end (the central disabled
    /// notifications or went away).
    func notifySocketEvent(_ characteristic: SimulatedCharacteristic) {
        if characteristic.notifySocketHungUp() {
            self.logger.debug("notifications of \(SimulatedCharacteristic.hex4(characteristic.uuid16)) released")
            self.releaseNotifyFD(characteristic, emit: true)
            self.subscriptionsChanged()
        }
    }

    /// Closes our end of the acquired socket and clears `NotifyAcquired`.
    func releaseNotifyFD(_ characteristic: SimulatedCharacteristic, emit: Bool) {
        guard let fd = characteristic.notifyFD else { return }
        if let registration = characteristic.notifyRegistration { self.loop.deregister(registration) }
        characteristic.notifyRegistration = nil
        fd.close()
        characteristic.notifyFD = nil
        characteristic.notifyOwner = nil
        if emit { self.setCharacteristic(characteristic, "NotifyAcquired", .boolean(false)) }
    }

    func startNotify(_ characteristic: SimulatedCharacteristic, _ call: DBusMethodCall) {
        guard characteristic.canNotify else { return call.fail(BlueZError.notSupported) }
        guard characteristic.notifyFD == nil else { return call.fail(BlueZError.notPermitted("Notify acquired")) }
        let sender = call.sender ?? ""
        // bluetoothd calls StartNotify for every central that enables notifications and StopNotify after the last
        // one disables them, so a repeated StartNotify is not an error here.
        if !characteristic.notifyClients.contains(sender) { characteristic.notifyClients.append(sender) }
        self.setCharacteristic(characteristic, "Notifying", .boolean(true))
        call.reply()
        self.strapSubscribed(characteristic)
    }

    /// A strap has no start command: its session starts when a central subscribes to Heart Rate Measurement.
    func strapSubscribed(_ characteristic: SimulatedCharacteristic) {
        guard self.kind == .hrs, characteristic.uuid16 == 0x2A37, self.device?.session == nil else { return }
        self.startSession(central: nil)
    }

    func stopNotify(_ characteristic: SimulatedCharacteristic, _ call: DBusMethodCall) {
        guard let sender = call.sender, let index = characteristic.notifyClients.firstIndex(of: sender) else {
            return call.fail(BlueZError.failed("No notify session started"))
        }
        characteristic.notifyClients.remove(at: index)
        if characteristic.notifyClients.isEmpty {
            self.setCharacteristic(characteristic, "Notifying", .boolean(false))
        }
        call.reply()
        self.subscriptionsChanged()
    }

    /// The last subscription ended: the central is done with this session.
    func subscriptionsChanged() {
        guard self.device?.session != nil, !self.characteristics.contains(where: \.hasSubscribers) else { return }
        self.stopSession(reason: "no stream is subscribed any more")
    }
}
