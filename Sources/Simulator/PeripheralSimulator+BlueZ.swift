import Bluetooth
import DBus
import E4

/// Following bluetoothd: its presence on the bus, the adapter object and its power, the centrals that connect to
/// us; and the registration of the application and the advertisement once all is ready.
///
/// bluetoothd forgets both registrations when it exits or the adapter goes away, so either event sends us back to
/// waiting, and its return to registering. Every wait is bounded by ``adapterTimeout`` and every call by
/// ``callTimeout``: a peripheral that cannot register says why in one line and exits, it never hangs.
extension PeripheralSimulator {
    /// Subscribes to bluetoothd's object and property signals and follows the owner of `org.bluez`.
    func watchBlueZ(on connection: DBusConnection) throws(DBusError) {
        self.subscriptions.append(try connection.subscribe(
            DBusMatchRule(sender: PeripheralSimulator.bluezName, interface: PeripheralSimulator.objectManagerInterface)
        ) { [weak self] message in
            self?.objectManagerSignal(message)
        })
        self.subscriptions.append(try connection.subscribe(
            DBusMatchRule(sender: PeripheralSimulator.bluezName, interface: PeripheralSimulator.propertiesInterface,
                          member: "PropertiesChanged", pathNamespace: self.adapterPath)
        ) { [weak self] message in
            self?.propertiesChanged(message)
        })
        self.ownerWatch = try connection.watchNameOwner(PeripheralSimulator.bluezName) { [weak self] owner in
            guard let self, !self.stopped else { return }
            if let owner {
                self.blueZAppeared(owner)
            } else {
                self.blueZLeft()
            }
        }
    }

    /// Calls a bluetoothd method with ``callTimeout``; `reply` runs only if nothing was lost in between.
    func callBlueZ(_ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue],
                   reply: @escaping (Result<[DBusValue], DBusError>) -> Void) {
        guard let connection = self.connection else { return }
        let generation = self.generation
        connection.call(destination: PeripheralSimulator.bluezName, path: path, interface: interface, member: member,
                        arguments: arguments, timeout: self.callTimeout) { [weak self] result in
            guard let self, !self.stopped, self.generation == generation else { return }
            reply(result)
        }
    }

    /// A failed call as one line: bluetoothd's error, or that it did not answer in time.
    func describe(_ error: DBusError, calling member: String) -> String {
        if error.name == DBusError.noReplyName {
            return "bluetoothd did not answer \(member) within \(self.callTimeout)"
        }
        return "\(member) on \(self.adapterPath) failed: \(error)"
    }

    // MARK: bluetoothd and the adapter

    func blueZAppeared(_ owner: String) {
        self.generation += 1
        if self.registration == .waitingForBlueZ {
            self.forgetAdapter()
        } else {
            // A new owner without a gap: the old bluetoothd is gone all the same.
            self.resetAfterLoss(reason: "bluetoothd restarted")
        }
        self.registration = .waitingForAdapter
        self.armDeadline()
        self.logger.info("bluetoothd is on the bus as \(owner)")
        self.callBlueZ("/", PeripheralSimulator.objectManagerInterface, "GetManagedObjects", []) { [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let error):
                self.fail(self.describe(error, calling: "GetManagedObjects"))
            case .success(let values):
                self.readObjects(values.first)
            }
        }
    }

    /// The initial object tree: the adapter, and centrals already connected.
    func readObjects(_ tree: DBusValue?) {
        for (path, interfaces) in tree?.stringDictionary ?? [] {
            let byName = interfaces.stringKeyed ?? [:]
            if path == self.adapterPath {
                self.interfacesAdded(byName)
            } else if self.isBelowAdapter(path), let properties = byName[PeripheralSimulator.deviceInterface] {
                self.noteDevice(path, properties.stringKeyed ?? [:])
            }
        }
        if !self.adapterInterfaces.contains(PeripheralSimulator.adapterInterface) {
            self.logger.info("waiting for adapter \(self.adapterName)")
        }
    }

    func blueZLeft() {
        self.generation += 1
        if self.registration == .registered {
            self.logger.warn("bluetoothd left the bus; registering again when it returns")
        }
        self.resetAfterLoss(reason: "bluetoothd left the bus")
        self.registration = .waitingForBlueZ
        self.armDeadline()
    }

    /// Interfaces of the adapter object appeared (from the initial tree or `InterfacesAdded`).
    func interfacesAdded(_ interfaces: [String: DBusValue]) {
        let isNew = !self.adapterInterfaces.contains(PeripheralSimulator.adapterInterface)
        self.adapterInterfaces.formUnion(interfaces.keys)
        if isNew, let properties = interfaces[PeripheralSimulator.adapterInterface]?.stringKeyed {
            guard let text = properties["Address"]?.string, let address = BluetoothAddress(text) else {
                return self.fail("adapter \(self.adapterName) reports no valid Address")
            }
            guard self.ensureDevice(address) else { return }
            self.adapterPowered = properties["Powered"]?.bool ?? false
            self.claimAlias(current: properties["Alias"]?.string)
        }
        self.proceed()
    }

    func adapterLeft() {
        self.generation += 1
        if self.registration == .registered {
            self.logger.warn("adapter \(self.adapterName) went away; registering again when it returns")
        }
        self.resetAfterLoss(reason: "the adapter went away")
        self.registration = .waitingForAdapter
        self.armDeadline()
    }

    /// Forgets what bluetoothd knew of the adapter and of our registrations (it forgets them too).
    func forgetAdapter() {
        self.adapterInterfaces = []
        self.adapterPowered = false
        self.powerRequested = false
        self.applicationRequested = false
        self.applicationRegistered = false
        self.advertisementRequested = false
        self.advertisementRegistered = false
    }

    /// Creates the wristband (its identity is the adapter's address) and its truth recorder, once.
    ///
    /// - Returns: `false` after a failure was reported.
    func ensureDevice(_ address: BluetoothAddress) -> Bool {
        if let device = self.device {
            if device.address != address {
                self.logger.warn("adapter \(self.adapterName) now has address \(address); the wristband keeps "
                                 + "serial \(device.serial)")
            }
            return true
        }
        let parameters = Simulator.physiology(devices: 1, seed: self.seed, scenario: self.scenario)[0]
        let device = SimulatedDevice(index: 1, seed: self.seed, physiology: parameters, address: address,
                                     kind: self.kind)
        device.characteristics = self.characteristics
        if let directory = self.truthDirectory {
            do {
                self.truths[device.index] = try TruthRecorder(directory: directory, serial: device.serial,
                                                              kind: device.kind)
            } catch {
                self.fail("cannot write truth to \(directory)/\(device.serial): \(error)")
                return false
            }
        }
        self.device = device
        return true
    }

    /// Names the adapter "Empatica E4" (`Adapter1.Alias`). A central's bluetoothd reads the GAP Device Name
    /// characteristic after connecting and replaces the device's `Name` with it; bluetoothd serves the adapter's
    /// alias there, so without this the wristband would be renamed to the host's name once connected. The alias is
    /// bluetoothd's stored setting for this adapter and outlives us; the log says what it was.
    func claimAlias(current: String?) {
        let name = self.device?.name ?? E4Profile.e4Name
        guard current != name else { return }
        self.logger.info("setting the alias of \(self.adapterName) to \"\(name)\" (was \"\(current ?? "")\"), the GAP "
                         + "Device Name a central reads")
        self.callBlueZ(self.adapterPath, PeripheralSimulator.propertiesInterface, "Set",
                       [.string(PeripheralSimulator.adapterInterface), .string("Alias"),
                        .variant(.string(name))]) { [weak self] result in
            guard let self, case .failure(let error) = result else { return }
            self.logger.warn("cannot set the alias of \(self.adapterName): \(error); a connected central will see "
                             + "the adapter's own name as the GAP Device Name")
        }
    }

    // MARK: Registration

    /// Takes the next step towards serving, each once: power the adapter on, register the application when
    /// `GattManager1` is there, then the advertisement when `LEAdvertisingManager1` is. Called whenever
    /// something it waits for may have changed.
    func proceed() {
        guard !self.stopped, !self.failed, self.device != nil,
              self.adapterInterfaces.contains(PeripheralSimulator.adapterInterface) else { return }
        if !self.adapterPowered {
            // Once serving, a power-off is the operator's (or a test's) choice: bluetoothd keeps both
            // registrations and advertises again when the adapter is powered on.
            guard self.registration != .registered else { return }
            self.registration = .powering
            if !self.powerRequested { self.powerOn() }
            return
        }
        guard self.registration != .registered else { return }
        self.registration = .registering
        guard self.adapterInterfaces.contains(PeripheralSimulator.gattManagerInterface) else { return }
        guard self.applicationRegistered else {
            if !self.applicationRequested { self.registerApplication() }
            return
        }
        guard self.adapterInterfaces.contains(PeripheralSimulator.advertisingManagerInterface) else { return }
        guard self.advertisementRegistered, let device = self.device else {
            if !self.advertisementRequested { self.registerAdvertisement() }
            return
        }
        self.registration = .registered
        self.disarmDeadline()
        self.logger.info("advertising as \"\(device.name)\" on \(self.adapterName) "
                         + "(address \(device.addressString), serial \(device.serial))")
    }

    func powerOn() {
        self.powerRequested = true
        self.logger.info("adapter \(self.adapterName) is off; powering it on")
        self.callBlueZ(self.adapterPath, PeripheralSimulator.propertiesInterface, "Set",
                       [.string(PeripheralSimulator.adapterInterface), .string("Powered"),
                        .variant(.boolean(true))]) { [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let error):
                self.fail("cannot power on \(self.adapterName): \(error)")
            case .success:
                // bluetoothd answers once the controller is up; PropertiesChanged may come before or after.
                self.adapterPowered = true
                self.proceed()
            }
        }
    }

    func registerApplication() {
        self.applicationRequested = true
        self.callBlueZ(self.adapterPath, PeripheralSimulator.gattManagerInterface, "RegisterApplication",
                       [.objectPath(PeripheralSimulator.appRoot), .properties([])]) { [weak self] result in
            guard let self else { return }
            if case .failure(let error) = result {
                return self.fail(self.describe(error, calling: "RegisterApplication"))
            }
            self.applicationRegistered = true
            self.logger.info("registered the E4 GATT application on \(self.adapterName)")
            self.proceed()
        }
    }

    func registerAdvertisement() {
        guard let device = self.device else { return }
        self.advertisementRequested = true
        do {
            try self.exportAdvertisement(device)
        } catch {
            return self.fail("cannot export the advertisement: \(error)")
        }
        self.callBlueZ(self.adapterPath, PeripheralSimulator.advertisingManagerInterface, "RegisterAdvertisement",
                       [.objectPath(PeripheralSimulator.advertisementPath), .properties([])]) { [weak self] result in
            guard let self else { return }
            if case .failure(let error) = result {
                return self.fail(self.describe(error, calling: "RegisterAdvertisement"))
            }
            self.advertisementRegistered = true
            self.proceed()
        }
    }

    /// bluetoothd or the adapter went away: it dropped our registrations, the link and the notification fds.
    func resetAfterLoss(reason: String) {
        self.stopSession(reason: reason)
        for characteristic in self.characteristics {
            self.releaseNotifyFD(characteristic, emit: true)
            if !characteristic.notifyClients.isEmpty {
                characteristic.notifyClients.removeAll()
                self.setCharacteristic(characteristic, "Notifying", .boolean(false))
            }
        }
        self.centrals.removeAll()
        self.forgetAdapter()
    }

    // MARK: Signals

    func isBelowAdapter(_ path: String) -> Bool { path.hasPrefix(self.adapterPath + "/") }

    func objectManagerSignal(_ message: DBusMessage) {
        guard let arguments = try? message.arguments(), arguments.count == 2, let path = arguments[0].string else {
            return
        }
        switch message.member {
        case "InterfacesAdded"?:
            let interfaces = arguments[1].stringKeyed ?? [:]
            if path == self.adapterPath {
                self.interfacesAdded(interfaces)
            } else if self.isBelowAdapter(path), let properties = interfaces[PeripheralSimulator.deviceInterface] {
                self.noteDevice(path, properties.stringKeyed ?? [:])
            }
        case "InterfacesRemoved"?:
            let names = (arguments[1].arrayElements ?? []).compactMap(\.string)
            if path == self.adapterPath, names.contains(PeripheralSimulator.adapterInterface) {
                self.adapterLeft()
            } else if path == self.adapterPath {
                self.adapterInterfaces.subtract(names)
            } else if self.isBelowAdapter(path), names.contains(PeripheralSimulator.deviceInterface) {
                self.centralDisconnected(path)
            }
        default:
            break
        }
    }

    func propertiesChanged(_ message: DBusMessage) {
        guard let path = message.path, let arguments = try? message.arguments(), arguments.count >= 2,
              let interface = arguments[0].string, let changed = arguments[1].stringKeyed else { return }
        if path == self.adapterPath, interface == PeripheralSimulator.adapterInterface,
           let powered = changed["Powered"]?.bool {
            guard powered != self.adapterPowered else { return }
            self.adapterPowered = powered
            if self.registration == .registered {
                self.logger.warn("adapter \(self.adapterName) was powered \(powered ? "on" : "off")")
            }
            self.proceed()
        } else if self.isBelowAdapter(path), interface == PeripheralSimulator.deviceInterface,
                  let connected = changed["Connected"]?.bool {
            if connected {
                self.centralConnected(path, address: changed["Address"]?.string)
            } else {
                self.centralDisconnected(path)
            }
        }
    }

    // MARK: Centrals

    /// A Device1 object on our adapter: a central that is (or was) connected to us.
    func noteDevice(_ path: String, _ properties: [String: DBusValue]) {
        guard !path.dropFirst(self.adapterPath.count + 1).contains("/") else { return }
        if properties["Connected"]?.bool == true {
            self.centralConnected(path, address: properties["Address"]?.string)
        }
    }

    func centralConnected(_ path: String, address: String?) {
        guard self.centrals[path] == nil else { return }
        let address = address ?? PeripheralSimulator.address(fromDevicePath: path)
        self.centrals[path] = address
        self.logger.info("central \(address) connected")
    }

    func centralDisconnected(_ path: String) {
        guard let address = self.centrals.removeValue(forKey: path) else { return }
        self.logger.info("central \(address) disconnected")
        guard self.device?.session != nil else { return }
        if self.sessionCentral == path || (self.sessionCentral == nil && self.centrals.isEmpty) {
            self.stopSession(reason: "central \(address) disconnected")
        }
    }

    /// `…/dev_AA_BB_CC_DD_EE_FF` → `AA:BB:CC:DD:EE:FF` (bluetoothd's naming), for logs before Address is known.
    static func address(fromDevicePath path: String) -> String {
        let last = path.split(separator: "/").last.map(String.init) ?? path
        guard last.hasPrefix("dev_") else { return last }
        return last.dropFirst(4).split(separator: "_").joined(separator: ":")
    }
}
