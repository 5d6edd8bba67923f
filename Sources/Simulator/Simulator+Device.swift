import DBus

/// `org.bluez.Device1`: export on discovery, `Connect`/`Disconnect` with realistic delays, link loss.
extension Simulator {
    static let deviceInterface = "org.bluez.Device1"

    func exportDevice(_ device: SimulatedDevice, withRSSI: Bool) {
        guard let connection = self.bluez else { return }
        let interface = DBusInterface(name: Simulator.deviceInterface, properties: [
            ("Address", DBusProperty(.string(device.addressString))),
            ("AddressType", DBusProperty(.string("public"))),
            ("Name", DBusProperty(.string(device.name))),
            ("Alias", DBusProperty(.string(device.name), setter: { _ in nil })),
            ("Paired", DBusProperty(.boolean(false))),
            ("Trusted", DBusProperty(.boolean(false), setter: { _ in nil })),
            ("Blocked", DBusProperty(.boolean(false), setter: { _ in nil })),
            ("LegacyPairing", DBusProperty(.boolean(false))),
            ("RSSI", DBusProperty(withRSSI ? .int16(device.rssi) : nil)),
            ("Connected", DBusProperty(.boolean(device.linkUp))),
            ("UUIDs", DBusProperty(.strings(device.gattExported
                ? device.services.map { SimulatedCharacteristic.uuid128($0.uuid16) } : []))),
            ("Adapter", DBusProperty(.objectPath(Simulator.adapterPath))),
            ("ManufacturerData", DBusProperty(.dictionary(key: "q", value: "v", [
                .init(.uint16(0xFFFF), .variant(.bytes(device.manufacturerPayload))),
            ]))),
            ("ServicesResolved", DBusProperty(.boolean(device.servicesResolved))),
            ("AdvertisingFlags", DBusProperty(.bytes([0x06]))),
        ], methods: [
            DBusMethod("Connect") { [weak self, weak device] call in
                guard let self, let device else { return }
                self.connect(device, call)
            },
            DBusMethod("Disconnect") { [weak self, weak device] call in
                guard let self, let device else { return }
                self.disconnect(device, call)
            },
            DBusMethod("ConnectProfile", in: "s") { call in call.fail(BlueZError.notSupported) },
            DBusMethod("DisconnectProfile", in: "s") { call in call.fail(BlueZError.notSupported) },
            DBusMethod("Pair") { call in call.fail(BlueZError.failed("Pairing is not simulated")) },
            DBusMethod("CancelPairing") { call in call.fail(BlueZError.doesNotExist) },
        ])
        do {
            try connection.objects.export(device.path, interfaces: [interface])
            device.exported = true
            device.rssiPresent = withRSSI
            device.lastActivity = self.now
            self.logger.debug("device \(device.addressString) appeared")
        } catch {
            self.logger.error("cannot export \(device.path): \(error)")
        }
    }

    /// Removes the device and its GATT objects (InterfacesRemoved, children first as bluetoothd does).
    func unexportDevice(_ device: SimulatedDevice) {
        guard let connection = self.bluez else { return }
        if device.gattExported {
            for characteristic in device.characteristics.reversed() {
                if characteristic.canNotify {
                    connection.objects.unexport(characteristic.path + "/desc" + SimulatedCharacteristic.hex4(
                        characteristic.handle + 2))
                }
                connection.objects.unexport(characteristic.path)
            }
            for service in device.services.reversed() { connection.objects.unexport(service.path) }
            device.gattExported = false
        }
        connection.objects.unexport(device.path)
        device.exported = false
        device.rssiPresent = false
        for monitor in self.monitors { monitor.found[device.index] = nil }
    }

    func connect(_ device: SimulatedDevice, _ call: DBusMethodCall) {
        self.connectCalls += 1
        if self.failIfInjected(call, "Connect") { return }
        guard self.powered else { return call.fail(BlueZError.notReady) }
        switch device.state {
        case .connected:
            return call.reply()
        case .connecting, .disconnecting:
            return call.fail(BlueZError.inProgress)
        case .disconnected:
            break
        }
        device.state = .connecting
        device.pendingConnect = call
        let timing = self.scenario.timing
        guard device.isInRange(at: self.now) else {
            device.connectTimer = self.after(milliseconds: Int(timing.connectTimeoutSeconds * 1000)) {
                [weak self, weak device] in
                guard let self, let device, device.state == .connecting else { return }
                device.state = .disconnected
                device.lastActivity = self.now
                device.pendingConnect?.fail(BlueZError.failed("le-connection-abort-by-local"))
                device.pendingConnect = nil
            }
            return
        }
        // Radio connection, then GATT discovery; bluetoothd answers Connect once services are resolved.
        let jitter = Int(device.random.unit() * Double(timing.connectMilliseconds) * 0.5)
        let delay = timing.connectMilliseconds + jitter
        device.connectTimer = self.after(milliseconds: delay) { [weak self, weak device] in
            guard let self, let device, device.state == .connecting else { return }
            device.state = .connected
            device.linkUp = true
            device.connects += 1
            self.setProperty(device.path, Simulator.deviceInterface, "Connected", .boolean(true))
            self.logger.info("\(device.addressString) connected")
            device.connectTimer = self.after(milliseconds: timing.servicesMilliseconds) { [weak self, weak device] in
                guard let self, let device, device.state == .connected else { return }
                if !device.gattExported { self.exportGATT(device) }
                device.servicesResolved = true
                self.setProperty(device.path, Simulator.deviceInterface, "ServicesResolved", .boolean(true))
                device.pendingConnect?.reply()
                device.pendingConnect = nil
            }
        }
    }

    func disconnect(_ device: SimulatedDevice, _ call: DBusMethodCall) {
        if self.failIfInjected(call, "Disconnect") { return }
        switch device.state {
        case .disconnected:
            return call.reply()
        case .disconnecting:
            // bluetoothd queues further Disconnect calls and answers them all when the link is down.
            device.pendingDisconnects.append(call)
            return
        case .connecting, .connected:
            break
        }
        device.pendingDisconnects.append(call)
        device.state = .disconnecting
        self.after(milliseconds: self.scenario.timing.disconnectMilliseconds) { [weak self, weak device] in
            guard let self, let device, device.state == .disconnecting else { return }
            self.dropConnection(device, reason: "disconnected by client", emit: true)
        }
    }

    /// Ends a connection (or attempt): streams stop, notification fds hang up, `ServicesResolved` and then
    /// `Connected` go false.
    ///
    /// - Parameter emit: whether to emit signals (not while the BlueZ face is going away).
    func dropConnection(_ device: SimulatedDevice, reason: String, emit: Bool) {
        if let timer = device.connectTimer {
            _ = self.loop.cancel(timer)
            device.connectTimer = nil
        }
        let linkWasUp = device.linkUp
        device.linkUp = false
        // A Connect still waiting for services: bluetoothd answers "Disconnected early" once the link was up.
        device.pendingConnect?.fail(BlueZError.failed(linkWasUp ? "Disconnected early"
                                                                : "le-connection-abort-by-local"))
        device.pendingConnect = nil
        let wasConnected = linkWasUp
        device.state = .disconnected
        device.session = nil
        device.lastActivity = self.now
        for characteristic in device.characteristics {
            self.releaseNotifyFD(characteristic, emit: emit)
            if !characteristic.notifyClients.isEmpty {
                characteristic.notifyClients.removeAll()
                if emit { self.setCharacteristic(characteristic, "Notifying", .boolean(false)) }
            }
        }
        if device.servicesResolved {
            device.servicesResolved = false
            if emit { self.setProperty(device.path, Simulator.deviceInterface, "ServicesResolved", .boolean(false)) }
        }
        // Disconnect calls are answered before Connected goes false (src/device.c, device_remove_connection).
        let disconnects = device.pendingDisconnects
        device.pendingDisconnects.removeAll()
        for call in disconnects { call.reply() }
        if wasConnected {
            if emit { self.setProperty(device.path, Simulator.deviceInterface, "Connected", .boolean(false)) }
            self.logger.info("\(device.addressString) disconnected: \(reason)")
        }
    }
}
