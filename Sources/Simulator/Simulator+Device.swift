import DBus

/// `org.bluez.Device1`: export on discovery, `Connect`/`Disconnect` with realistic delays, link loss.
extension Simulator {
    static let deviceInterface = "org.bluez.Device1"

    func exportDevice(_ device: SimulatedDevice, withRSSI: Bool) {
        guard let connection = self.bluez else { return }
        let hostileProperties = self.hostile(device)?.wrongTypes == true ? Self.wrongTypedDeviceProperties(device) : nil
        let interface = DBusInterface(name: Simulator.deviceInterface, properties: hostileProperties ?? [
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
            // Before the GATT tree, what the device advertised (bluetoothd's order).
            ("UUIDs", DBusProperty(.strings(device.gattExported
                ? device.services.map { SimulatedCharacteristic.uuid128($0.uuid16) }
                : device.advertisedServices.map(SimulatedCharacteristic.uuid128)))),
            ("Adapter", DBusProperty(.objectPath(self.adapter(of: device).path))),
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
            // bluetoothd tries an SDP search over BR/EDR, which an LE-only device fails.
            DBusMethod("ConnectProfile", in: "s") { call in
                call.fail(BlueZError.failed("br-connection-sdp-search"))
            },
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
        for monitor in self.adapter(of: device).monitors { monitor.found[device.index] = nil }
    }

    func connect(_ device: SimulatedDevice, _ call: DBusMethodCall) {
        self.connectCalls += 1
        if self.failIfInjected(call, "Connect") { return }
        if self.hostile(device)?.ownerChangeMidCall == .connect, !self.ownerChangedMidCall {
            return self.changeOwnerMidCall(call, device)
        }
        guard self.adapter(of: device).powered else { return call.fail(BlueZError.notReady) }
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
        let started = self.now
        guard device.isInRange(at: started) && self.wardAccepts(device, at: started) else {
            // A wristband connected through another adapter (or board) does not advertise: the initiator listens.
            if (self.ward != nil || self.adapters.count > 1) && device.isInRange(at: started) {
                self.awaitAdvertisement(device, until: started + timing.connectTimeoutSeconds)
            } else {
                self.failConnect(device, after: Int(timing.connectTimeoutSeconds * 1000))
            }
            return
        }
        // bluetoothd answers Connect once the LE link and ATT are up, and resolves the services afterwards.
        let jitter = Int(device.random.unit() * Double(timing.connectMilliseconds) * 0.5)
        let delay = timing.connectMilliseconds + jitter
        device.connectTimer = self.after(milliseconds: delay) { [weak self, weak device] in
            guard let self, let device, device.state == .connecting else { return }
            // In a ward the wristband may have gone to another board (or away) meanwhile: it no longer advertises
            // to us, and our initiator waits out the rest of the timeout.
            guard self.wardClaims(device, at: self.now) else {
                self.awaitAdvertisement(device, until: started + timing.connectTimeoutSeconds)
                return
            }
            self.linkCameUp(device)
        }
    }

    /// A ward board's `Connect` to a wristband that does not answer it (connected to another board or through
    /// another adapter of this one, out of range, the radio deaf): like bluetoothd's LE initiator, it keeps
    /// listening, connects if the wristband advertises to this adapter again before `deadline` (checked every
    /// 100 ms; the link is up `connect_ms` later) and fails at the deadline otherwise.
    func awaitAdvertisement(_ device: SimulatedDevice, until deadline: Double) {
        device.connectTimer = self.after(milliseconds: 100) { [weak self, weak device] in
            guard let self, let device, device.state == .connecting else { return }
            let now = self.now
            guard now < deadline else { return self.failConnect(device, after: 0) }
            guard device.isInRange(at: now) && self.wardReachable(device, at: now) else {
                return self.awaitAdvertisement(device, until: deadline)
            }
            device.connectTimer = self.after(milliseconds: self.scenario.timing.connectMilliseconds) {
                [weak self, weak device] in
                guard let self, let device, device.state == .connecting else { return }
                if self.wardClaims(device, at: self.now) {
                    self.linkCameUp(device)
                } else {
                    self.awaitAdvertisement(device, until: deadline)
                }
            }
        }
    }

    /// A `Connect` nobody answers: bluetoothd's LE initiator gives up after the timeout and the call fails with
    /// `org.bluez.Error.Failed: le-connection-abort-by-local` (src/device.c, the kernel's connect timeout).
    func failConnect(_ device: SimulatedDevice, after milliseconds: Int) {
        device.connectTimer = self.after(milliseconds: milliseconds) { [weak self, weak device] in
            guard let self, let device, device.state == .connecting else { return }
            device.connectTimer = nil
            device.state = .disconnected
            device.lastActivity = self.now
            device.pendingConnect?.fail(BlueZError.failed("le-connection-abort-by-local"))
            device.pendingConnect = nil
        }
    }

    /// The link is up: `Connected` reads true (signalled only if the scenario says so), the MTU is negotiated and
    /// `Connect` is answered; GATT discovery follows.
    func linkCameUp(_ device: SimulatedDevice) {
        let behaviour = self.scenario.bluetoothd
        device.state = .connected
        device.linkUp = true
        device.connects += 1
        self.setProperty(device.path, Simulator.deviceInterface, "Connected", .boolean(true),
                         emit: behaviour.signalsConnected)
        self.setMTU(device, behaviour.attMTU)
        self.logger.info("\(device.addressString) connected")
        device.pendingConnect?.reply()
        device.pendingConnect = nil
        device.connectTimer = self.after(milliseconds: self.scenario.timing.servicesMilliseconds) {
            [weak self, weak device] in
            guard let self, let device, device.state == .connected else { return }
            device.connectTimer = nil
            if behaviour.resolvesBeforeExport && !device.gattExported {
                // bluetoothd in the VM: resolved first, the objects announced afterwards.
                device.servicesResolved = true
                self.setProperty(device.path, Simulator.deviceInterface, "ServicesResolved", .boolean(true))
                device.connectTimer = self.after(milliseconds: behaviour.lateExportMilliseconds) {
                    [weak self, weak device] in
                    guard let self, let device, device.state == .connected else { return }
                    device.connectTimer = nil
                    if !device.gattExported { self.exportGATT(device) }
                }
                return
            }
            if !device.gattExported { self.exportGATT(device) }
            device.servicesResolved = true
            self.setProperty(device.path, Simulator.deviceInterface, "ServicesResolved", .boolean(true))
        }
    }

    /// Sets every characteristic's `MTU` without a signal (bluetoothd computes it when read).
    func setMTU(_ device: SimulatedDevice, _ mtu: UInt16) {
        for characteristic in device.characteristics {
            self.setCharacteristic(characteristic, "MTU", .uint16(mtu), emit: false)
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
        // bluetoothd closes the ATT channel first (ServicesResolved false), and the kernel reports the link down
        // about 300 ms later (Connected false, after the Disconnect calls are answered): two signals.
        let timing = self.scenario.timing
        if let timer = device.connectTimer { _ = self.loop.cancel(timer) }
        device.connectTimer = self.after(milliseconds: timing.disconnectMilliseconds) { [weak self, weak device] in
            guard let self, let device, device.state == .disconnecting else { return }
            if self.closeATT(device, emit: true) {
                self.emitPropertiesChanged(device.path, Simulator.deviceInterface,
                                           [("ServicesResolved", .boolean(false))])
            }
            device.connectTimer = self.after(milliseconds: timing.linkDownMilliseconds) { [weak self, weak device] in
                guard let self, let device, device.state == .disconnecting else { return }
                device.connectTimer = nil
                self.dropConnection(device, reason: "disconnected by client", emit: true)
            }
        }
    }

    /// Ends the ATT channel: streams stop, notification fds hang up, `StartNotify` sessions end, and
    /// `ServicesResolved` is set false without a signal (the caller emits it, alone or with `Connected`).
    ///
    /// - Returns: whether the services were resolved.
    func closeATT(_ device: SimulatedDevice, emit: Bool) -> Bool {
        device.session = nil
        for characteristic in device.characteristics {
            self.releaseNotifyFD(characteristic, emit: emit)
            if !characteristic.notifyClients.isEmpty {
                characteristic.notifyClients.removeAll()
                if emit { self.setCharacteristic(characteristic, "Notifying", .boolean(false)) }
            }
        }
        self.setMTU(device, BluetoothdBehaviour.defaultMTU)
        guard device.servicesResolved else { return false }
        device.servicesResolved = false
        self.setProperty(device.path, Simulator.deviceInterface, "ServicesResolved", .boolean(false), emit: false)
        return true
    }

    /// Ends a connection (or attempt). A link lost at once (remote disconnect, out of range, power off) announces
    /// `ServicesResolved` and `Connected` false in one `PropertiesChanged`, as bluetoothd 5.66 does; after a
    /// client's `Disconnect` only `Connected` is left to announce.
    ///
    /// - Parameter emit: whether to emit signals (not while the BlueZ face is going away).
    func dropConnection(_ device: SimulatedDevice, reason: String, emit: Bool) {
        if let timer = device.connectTimer {
            _ = self.loop.cancel(timer)
            device.connectTimer = nil
        }
        let linkWasUp = device.linkUp
        device.linkUp = false
        // A Connect still waiting: the link never came up (once it is up, Connect has been answered).
        device.pendingConnect?.fail(BlueZError.failed("le-connection-abort-by-local"))
        device.pendingConnect = nil
        device.state = .disconnected
        device.lastActivity = self.now
        let resolvedWasTrue = self.closeATT(device, emit: emit)
        // Disconnect calls are answered before Connected goes false (src/device.c, device_remove_connection).
        let disconnects = device.pendingDisconnects
        device.pendingDisconnects.removeAll()
        for call in disconnects { call.reply() }
        var changed: [(String, DBusValue)] = resolvedWasTrue ? [("ServicesResolved", .boolean(false))] : []
        if linkWasUp {
            self.setProperty(device.path, Simulator.deviceInterface, "Connected", .boolean(false), emit: false)
            changed.append(("Connected", .boolean(false)))
            self.logger.info("\(device.addressString) disconnected: \(reason)")
            self.ward?.release(device, board: self.boardIndex, reason: reason)
        }
        if emit { self.emitPropertiesChanged(device.path, Simulator.deviceInterface, changed) }
    }
}
