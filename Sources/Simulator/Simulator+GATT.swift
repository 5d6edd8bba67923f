#if canImport(Glibc)
import Glibc
#endif
import DBus
import E4
import Posix

/// The GATT tree of SPEC §6 as bluetoothd's client exports it (`GattService1`, `GattCharacteristic1`,
/// `GattDescriptor1` for each CCCD) and the characteristic methods with bluetoothd's checks and errors.
extension Simulator {
    static let serviceInterface = "org.bluez.GattService1"
    static let characteristicInterface = "org.bluez.GattCharacteristic1"
    static let descriptorInterface = "org.bluez.GattDescriptor1"

    func exportGATT(_ device: SimulatedDevice) {
        guard let connection = self.bluez else { return }
        do {
            for service in device.services {
                try connection.objects.export(service.path, interfaces: [
                    DBusInterface(name: Simulator.serviceInterface, properties: [
                        ("UUID", DBusProperty(.string(SimulatedCharacteristic.uuid128(service.uuid16)))),
                        ("Device", DBusProperty(.objectPath(device.path))),
                        ("Primary", DBusProperty(.boolean(true))),
                        ("Includes", DBusProperty(.objectPaths([]))),
                        ("Handle", DBusProperty(.uint16(service.handle))),
                    ]),
                ])
            }
            for characteristic in device.characteristics {
                try connection.objects.export(characteristic.path, interfaces: [
                    self.characteristicInterface(characteristic, device: device),
                ])
                if characteristic.canNotify {
                    let descriptor = characteristic.path + "/desc" + SimulatedCharacteristic.hex4(
                        characteristic.handle + 2)
                    try connection.objects.export(descriptor, interfaces: [
                        DBusInterface(name: Simulator.descriptorInterface, properties: [
                            ("UUID", DBusProperty(.string(SimulatedCharacteristic.uuid128(0x2902)))),
                            ("Characteristic", DBusProperty(.objectPath(characteristic.path))),
                            ("Value", DBusProperty(.bytes([]))),
                            ("Handle", DBusProperty(.uint16(characteristic.handle + 2))),
                        ], methods: [
                            DBusMethod("ReadValue", in: "a{sv}", out: "ay") { call in
                                call.reply([.bytes([characteristic.hasSubscribers ? 1 : 0, 0])])
                            },
                            DBusMethod("WriteValue", in: "aya{sv}") { call in
                                call.fail(BlueZError.notPermitted("Write not permitted"))
                            },
                        ]),
                    ])
                }
            }
            device.gattExported = true
            self.setProperty(device.path, Simulator.deviceInterface, "UUIDs",
                             .strings(device.services.map { SimulatedCharacteristic.uuid128($0.uuid16) }))
        } catch {
            self.logger.error("cannot export the GATT tree of \(device.addressString): \(error)")
        }
    }

    func characteristicInterface(_ characteristic: SimulatedCharacteristic, device: SimulatedDevice)
        -> DBusInterface
    {
        var properties: [(String, DBusProperty)] = [
            ("UUID", DBusProperty(.string(characteristic.uuidString))),
            ("Service", DBusProperty(.objectPath(characteristic.servicePath))),
            ("Value", DBusProperty(.bytes([]))),
            ("Notifying", DBusProperty(.boolean(false))),
            ("Flags", DBusProperty(.strings(characteristic.flags))),
            ("Handle", DBusProperty(.uint16(characteristic.handle + 1))),
            // bluetoothd reads the live ATT MTU; 23 without a link.
            ("MTU", DBusProperty(.uint16(device.linkUp ? self.scenario.bluetoothd.attMTU
                                                       : BluetoothdBehaviour.defaultMTU))),
        ]
        if characteristic.canNotify {
            properties.append(("NotifyAcquired", DBusProperty(.boolean(false))))
        }
        return DBusInterface(name: Simulator.characteristicInterface, properties: properties, methods: [
            DBusMethod("ReadValue", in: "a{sv}", out: "ay") { [weak self, weak device] call in
                guard let self, let device else { return }
                self.readValue(characteristic, device, call)
            },
            DBusMethod("WriteValue", in: "aya{sv}") { [weak self, weak device] call in
                guard let self, let device else { return }
                self.writeValue(characteristic, device, call)
            },
            DBusMethod("AcquireWrite", in: "a{sv}", out: "hq") { call in call.fail(BlueZError.notSupported) },
            DBusMethod("AcquireNotify", in: "a{sv}", out: "hq") { [weak self, weak device] call in
                guard let self, let device else { return }
                self.acquireNotify(characteristic, device, call)
            },
            DBusMethod("StartNotify") { [weak self, weak device] call in
                guard let self, let device else { return }
                self.startNotify(characteristic, device, call)
            },
            DBusMethod("StopNotify") { [weak self] call in
                self?.stopNotify(characteristic, call)
            },
            DBusMethod("Confirm") { call in call.reply() },
        ])
    }

    func readValue(_ characteristic: SimulatedCharacteristic, _ device: SimulatedDevice, _ call: DBusMethodCall) {
        if self.failIfInjected(call, "ReadValue") { return }
        guard device.state == .connected else { return call.fail(BlueZError.failed("Not connected")) }
        guard characteristic.canRead else { return call.fail(BlueZError.notPermitted("Read not permitted")) }
        let value = device.readValue(characteristic, at: self.now)
        self.setCharacteristic(characteristic, "Value", .bytes(value))
        call.reply([.bytes(value)])
    }

    func writeValue(_ characteristic: SimulatedCharacteristic, _ device: SimulatedDevice, _ call: DBusMethodCall) {
        if self.failIfInjected(call, "WriteValue") { return }
        guard device.state == .connected else { return call.fail(BlueZError.failed("Not connected")) }
        // bluetoothd refuses a write to a characteristic without a write flag itself (src/gatt-client.c).
        guard characteristic.canWrite else { return call.fail(BlueZError.notSupported) }
        let bytes = call.arguments[0].bytes ?? []
        let decoded = bytes.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Result<E4Command, E4DecodeError> in
            do throws(E4DecodeError) {
                return .success(try E4Command.decode(raw))
            } catch {
                return .failure(error)
            }
        }
        let command: E4Command
        switch decoded {
        case .success(let value): command = value
        // The wristband answers "invalid attribute value length"; bluetoothd renames that ATT error.
        case .failure(.wrongLength), .failure(.tooShort): return call.fail(BlueZError.invalidLength)
        case .failure: return call.fail(BlueZError.failed("Operation failed with ATT error: 0x80"))
        }
        switch command {
        case .start(let unixTime):
            self.logger.info("\(device.addressString) start command (device clock \(unixTime))")
            self.startStreaming(device)
        }
        call.reply()
    }

    func acquireNotify(_ characteristic: SimulatedCharacteristic, _ device: SimulatedDevice, _ call: DBusMethodCall) {
        if self.failIfInjected(call, "AcquireNotify") { return }
        // bluetoothd's order of checks (src/gatt-client.c, characteristic_acquire_notify).
        guard device.state == .connected else { return call.fail(BlueZError.failed("Not connected")) }
        guard characteristic.notifyFD == nil else { return call.fail(BlueZError.notPermitted("Notify acquired")) }
        guard characteristic.notifyClients.isEmpty else { return call.fail(BlueZError.inProgress) }
        guard characteristic.canNotify else { return call.fail(BlueZError.notSupported) }
        if self.hostileAcquireNotify(characteristic, device, call) { return }
        let theirs: FileDescriptor
        switch characteristic.openNotifySocket(owner: call.sender, on: self.loop, onEvent: { [weak self] in
            self?.notifySocketEvent($0)
        }) {
        case .success(let descriptor): theirs = descriptor
        case .failure(let error): return call.fail(error)
        }
        call.reply([.unixFD(theirs.rawValue), .uint16(self.scenario.bluetoothd.attMTU)])
        // D-Bus sent a duplicate; the client owns that one.
        theirs.close()
        self.setCharacteristic(characteristic, "NotifyAcquired", .boolean(true))
    }

    /// Our end of an acquired socket became readable or hung up: the client closed its fd (or wrote to it).
    func notifySocketEvent(_ characteristic: SimulatedCharacteristic) {
        if characteristic.notifySocketHungUp() {
            self.logger.debug("notify fd of \(characteristic.path) closed by the client")
            self.releaseNotifyFD(characteristic, emit: true)
        }
    }

    /// Closes our end of the acquired socket (the client sees a hang-up) and clears `NotifyAcquired`.
    func releaseNotifyFD(_ characteristic: SimulatedCharacteristic, emit: Bool) {
        guard let fd = characteristic.notifyFD else { return }
        if let registration = characteristic.notifyRegistration { self.loop.deregister(registration) }
        characteristic.notifyRegistration = nil
        fd.close()
        characteristic.notifyFD = nil
        characteristic.notifyOwner = nil
        if emit { self.setCharacteristic(characteristic, "NotifyAcquired", .boolean(false)) }
    }

    func startNotify(_ characteristic: SimulatedCharacteristic, _ device: SimulatedDevice, _ call: DBusMethodCall) {
        if self.failIfInjected(call, "StartNotify") { return }
        guard let sender = call.sender else { return call.fail(BlueZError.failed("No sender")) }
        guard device.state == .connected else { return call.fail(BlueZError.failed("Not connected")) }
        guard characteristic.notifyFD == nil else { return call.fail(BlueZError.notPermitted("Notify acquired")) }
        guard characteristic.canNotify else { return call.fail(BlueZError.notSupported) }
        guard !characteristic.notifyClients.contains(sender) else { return call.fail(BlueZError.inProgress) }
        characteristic.notifyClients.append(sender)
        self.setCharacteristic(characteristic, "Notifying", .boolean(true))
        call.reply()
    }

    /// bluetoothd 5.66 (`characteristic_stop_notify`) ends the acquired notification of whichever client holds it
    /// when the caller has no session of its own: the acquiring client's fd hangs up.
    func stopNotify(_ characteristic: SimulatedCharacteristic, _ call: DBusMethodCall) {
        if self.failIfInjected(call, "StopNotify") { return }
        guard let sender = call.sender, let index = characteristic.notifyClients.firstIndex(of: sender) else {
            if characteristic.notifyFD != nil {
                self.logger.info("StopNotify from \(call.sender ?? "?") releases the fd of \(characteristic.path)")
                call.reply()
                self.releaseNotifyFD(characteristic, emit: true)
                return
            }
            return call.fail(BlueZError.failed("No notify session started"))
        }
        characteristic.notifyClients.remove(at: index)
        if characteristic.notifyClients.isEmpty {
            self.setCharacteristic(characteristic, "Notifying", .boolean(false))
        }
        call.reply()
    }
}
