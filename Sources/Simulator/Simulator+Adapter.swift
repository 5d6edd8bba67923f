import DBus

/// `org.bluez.Adapter1` on `hci0` … `hciN-1`: power, per-client discovery sessions with merged filters (each
/// adapter its own, as bluetoothd keeps them), and the 1 s radio tick that makes devices advertise, moves their RSSI
/// and removes temporary devices, adapter by adapter.
extension Simulator {
    static let adapterInterface = "org.bluez.Adapter1"

    // `hci0`'s state by its old names (a one-adapter board's whole state, as tests read it).
    var powered: Bool { self.adapters[0].powered }
    var discoverySessions: [String] { self.adapters[0].discoverySessions }
    var scanRestartedAt: Double { self.adapters[0].scanRestartedAt }

    func exportAdapter(_ adapter: SimulatedAdapter, on connection: DBusConnection) throws(DBusError) {
        let interface = DBusInterface(name: Simulator.adapterInterface, properties: [
            ("Address", DBusProperty(.string(adapter.address))),
            ("AddressType", DBusProperty(.string("public"))),
            ("Name", DBusProperty(.string("empalink-sim"))),
            ("Alias", DBusProperty(.string("empalink-sim"), setter: { _ in nil })),
            ("Class", DBusProperty(.uint32(0))),
            ("Powered", DBusProperty(.boolean(adapter.powered), setter: { [weak self, unowned adapter] value in
                guard let self, let on = value.bool else { return BlueZError.invalidArguments }
                self.setPowered(on, adapter)
                return nil
            })),
            ("PowerState", DBusProperty(.string(adapter.powered ? "on" : "off"))),
            ("Discoverable", DBusProperty(.boolean(false), setter: { _ in nil })),
            ("DiscoverableTimeout", DBusProperty(.uint32(180), setter: { _ in nil })),
            ("Pairable", DBusProperty(.boolean(false), setter: { _ in nil })),
            ("PairableTimeout", DBusProperty(.uint32(0), setter: { _ in nil })),
            ("Discovering", DBusProperty(.boolean(false))),
            ("UUIDs", DBusProperty(.strings([
                "00001801-0000-1000-8000-00805f9b34fb", "00001800-0000-1000-8000-00805f9b34fb",
            ]))),
            ("Modalias", DBusProperty(.string("usb:v1D6Bp0246d0542"))),
            ("Roles", DBusProperty(.strings(["central", "peripheral"]))),
        ], methods: [
            DBusMethod("StartDiscovery") { [weak self, unowned adapter] call in self?.startDiscovery(call, adapter) },
            DBusMethod("StopDiscovery") { [weak self, unowned adapter] call in self?.stopDiscovery(call, adapter) },
            DBusMethod("SetDiscoveryFilter", in: "a{sv}") { [weak self, unowned adapter] call in
                self?.setDiscoveryFilter(call, adapter)
            },
            DBusMethod("GetDiscoveryFilters", out: "as") { call in call.reply([.strings(DiscoveryFilter.keys)]) },
            DBusMethod("RemoveDevice", in: "o") { [weak self, unowned adapter] call in
                self?.removeDevice(call, adapter)
            },
        ])
        try connection.objects.export(adapter.path, interfaces: [interface, self.monitorManagerInterface(adapter)])
    }

    // MARK: Discovery

    func startDiscovery(_ call: DBusMethodCall, _ adapter: SimulatedAdapter) {
        self.startDiscoveryCalls += 1
        if self.failIfInjected(call, "StartDiscovery") { return }
        guard let sender = call.sender else { return call.fail(BlueZError.failed("No sender")) }
        guard adapter.powered else { return call.fail(BlueZError.notReady) }
        guard !adapter.discoverySessions.contains(sender) else { return call.fail(BlueZError.busy) }
        adapter.discoverySessions.append(sender)
        self.logger.debug("discovery started by \(sender) (\(adapter.discoverySessions.count) session(s))"
            + (self.adapters.count > 1 ? " on \(adapter.name)" : ""))
        self.updateDiscovering(adapter)
        call.reply()
        // bluetoothd reports cached devices at once; ours advertise within the next radio tick.
        self.after(milliseconds: 50) { [weak self, unowned adapter] in self?.advertise(adapter, onlyNew: true) }
    }

    func stopDiscovery(_ call: DBusMethodCall, _ adapter: SimulatedAdapter) {
        if self.failIfInjected(call, "StopDiscovery") { return }
        guard let sender = call.sender else { return call.fail(BlueZError.failed("No sender")) }
        guard adapter.powered else { return call.fail(BlueZError.notReady) }
        guard let index = adapter.discoverySessions.firstIndex(of: sender) else {
            return call.fail(BlueZError.failed("No discovery started"))
        }
        adapter.discoverySessions.remove(at: index)
        self.updateDiscovering(adapter)
        call.reply()
    }

    func setDiscoveryFilter(_ call: DBusMethodCall, _ adapter: SimulatedAdapter) {
        if self.failIfInjected(call, "SetDiscoveryFilter") { return }
        guard let sender = call.sender else { return call.fail(BlueZError.failed("No sender")) }
        guard adapter.powered else { return call.fail(BlueZError.notReady) }
        switch DiscoveryFilter.parse(call.arguments[0]) {
        case .failure(let error):
            call.fail(error)
        case .success(let filter):
            if filter.usedDuplicateData {
                self.duplicateDataUses += 1
                self.logger.warn("\(sender) sent DuplicateData in SetDiscoveryFilter: BlueZ < 5.71 corrupts its heap")
            }
            if filter.usedDiscoverable {
                self.discoverableUses += 1
                self.logger.warn("\(sender) sent Discoverable in SetDiscoveryFilter: BlueZ < 5.71 corrupts its heap")
            }
            // An empty dictionary clears the client's filter.
            adapter.filters[sender] = call.arguments[0].stringDictionary?.isEmpty == true ? nil : filter
            call.reply()
        }
    }

    func removeDevice(_ call: DBusMethodCall, _ adapter: SimulatedAdapter) {
        if self.failIfInjected(call, "RemoveDevice") { return }
        guard let path = call.arguments[0].string else { return call.fail(BlueZError.invalidArguments) }
        guard let device = self.devices.first(where: {
            $0.path == path && $0.exported && $0.adapterIndex == adapter.index
        }) else {
            return call.fail(BlueZError.doesNotExist)
        }
        if device.state != .disconnected {
            self.dropConnection(device, reason: "removed", emit: true)
        }
        self.unexportDevice(device)
        call.reply()
    }

    /// Recomputes `Discovering` from the sessions; clears RSSI when discovery ends, as bluetoothd does.
    func updateDiscovering(_ adapter: SimulatedAdapter) {
        let discovering = !adapter.discoverySessions.isEmpty && adapter.powered
        let now = self.now
        if discovering, adapter.discoveringSince == nil {
            adapter.discoveringSince = now
            adapter.scanRestartedAt = now
            self.setProperty(adapter.path, Simulator.adapterInterface, "Discovering", .boolean(true))
        } else if !discovering, adapter.discoveringSince != nil {
            self.stopDiscoveringClock(adapter)
            self.setProperty(adapter.path, Simulator.adapterInterface, "Discovering", .boolean(false))
            for device in self.devices where device.exported && device.adapterIndex == adapter.index {
                device.lastActivity = max(device.lastActivity, now)
                if device.rssiPresent {
                    device.rssiPresent = false
                    self.setProperty(device.path, Simulator.deviceInterface, "RSSI", nil)
                }
            }
        }
    }

    func stopDiscoveringClock(_ adapter: SimulatedAdapter) {
        if let since = adapter.discoveringSince {
            adapter.discoveringTotal += self.now - since
            adapter.discoveringSince = nil
        }
    }

    /// Total seconds `adapter` has been discovering since start.
    func discoveringSeconds(_ adapter: SimulatedAdapter) -> Double {
        adapter.discoveringTotal + (adapter.discoveringSince.map { self.now - $0 } ?? 0)
    }

    /// The filters of the active sessions (`nil` entries: a session without a filter, which sees everything).
    func passesDiscoveryFilters(_ device: SimulatedDevice, _ adapter: SimulatedAdapter) -> Bool {
        for session in adapter.discoverySessions {
            guard let filter = adapter.filters[session] else { return true }
            if filter.matches(address: device.addressString, name: device.name, rssi: device.rssi,
                              advertisedUUIDs: device.advertisedServices.map(SimulatedCharacteristic.uuid128)) {
                return true
            }
        }
        return false
    }

    /// Whether any session of `adapter` asked for every advertisement (no RSSI change threshold).
    func wantsDuplicates(_ adapter: SimulatedAdapter) -> Bool {
        adapter.discoverySessions.contains { adapter.filters[$0]?.duplicateData == true }
    }

    // MARK: Power

    func setPowered(_ on: Bool, _ adapter: SimulatedAdapter) {
        guard on != adapter.powered else { return }
        adapter.powered = on
        self.logger.info("adapter \(self.adapters.count > 1 ? adapter.name + " " : "")powered \(on ? "on" : "off")")
        self.setProperty(adapter.path, Simulator.adapterInterface, "PowerState", .string(on ? "on" : "off"))
        if !on {
            for device in self.devices where device.state != .disconnected && device.adapterIndex == adapter.index {
                self.dropConnection(device, reason: "adapter powered off", emit: true)
            }
            adapter.discoverySessions.removeAll()
            self.updateDiscovering(adapter)
            for monitor in adapter.monitors { monitor.found.removeAll() }
        }
        // The object server stores the new Powered value after the setter; other paths set it here.
        self.setProperty(adapter.path, Simulator.adapterInterface, "Powered", .boolean(on))
    }

    // MARK: Radio tick

    /// Once a second: advertising devices move their RSSI and are reported to discovery and monitors;
    /// temporary devices time out; monitors lose silent devices.
    func radioTick() {
        guard self.bluez != nil else { return }
        if let ward = self.ward {
            self.wardRadioTick(ward)
        } else {
            for device in self.devices { device.stepRSSI() }
        }
        for adapter in self.adapters { self.radioTick(adapter) }
    }

    /// One adapter's part of the radio tick.
    func radioTick(_ adapter: SimulatedAdapter) {
        let now = self.now
        let discovering = adapter.discoveringSince != nil
        // bluetoothd restarts its LE scan every ~10 s and then announces each device's RSSI again.
        let restart = self.scenario.bluetoothd.scanRestartSeconds
        let restarted = discovering && restart > 0 && now - adapter.scanRestartedAt >= restart
        if restarted { adapter.scanRestartedAt = now }
        self.advertise(adapter, onlyNew: false, scanRestarted: restarted)
        for device in self.devices where device.exported && device.state == .disconnected && !discovering
            && device.adapterIndex == adapter.index
        {
            let tracked = adapter.monitors.contains { $0.found[device.index] != nil }
            if !tracked && now - device.lastActivity > self.scenario.timing.temporaryTimeoutSeconds {
                self.logger.debug("removing temporary device \(device.addressString)")
                self.unexportDevice(device)
            }
        }
        for monitor in adapter.monitors {
            for (index, seen) in monitor.found where now - seen > self.scenario.timing.monitorLostSeconds {
                monitor.found[index] = nil
                if let device = self.devices.first(where: { $0.index == index && $0.adapterIndex == adapter.index }) {
                    self.callMonitor(monitor, "DeviceLost", [.objectPath(device.path)])
                }
            }
        }
    }

    /// Delivers one advertisement from each advertising device to discovery and monitors.
    ///
    /// - Parameter scanRestarted: the scan just restarted, so discovery re-announces every RSSI.
    func advertise(_ adapter: SimulatedAdapter, onlyNew: Bool, scanRestarted: Bool = false) {
        guard adapter.powered, self.bluez != nil else { return }
        let now = self.now
        for device in self.devices where device.adapterIndex == adapter.index && device.isAdvertising(at: now)
            && self.heldElsewhere(device) == nil && self.wardListens(device, at: now)
        {
            if onlyNew && device.rssiPresent { continue }
            var seen = false
            if adapter.discoveringSince != nil && self.passesDiscoveryFilters(device, adapter) {
                seen = true
                self.reportFound(device, scanRestarted: scanRestarted)
            }
            for monitor in adapter.monitors where monitor.matches(device.advertisingData) {
                if !device.exported { self.exportDevice(device, withRSSI: true) }
                seen = true
                if monitor.found[device.index] == nil {
                    self.callMonitor(monitor, "DeviceFound", [.objectPath(device.path)])
                }
                monitor.found[device.index] = now
            }
            if seen {
                device.lastAdvertisement = now
                device.lastActivity = now
            }
        }
    }

    /// A discovered advertisement: the device appears (InterfacesAdded) or its RSSI changes.
    func reportFound(_ device: SimulatedDevice, scanRestarted: Bool = false) {
        if !device.exported {
            self.exportDevice(device, withRSSI: true)
            return
        }
        if scanRestarted {
            // A first report after the scan restarted: bluetoothd signals RSSI even when it is unchanged.
            device.rssiPresent = true
            self.setProperty(device.path, Simulator.deviceInterface, "RSSI", .int16(device.rssi), emit: false)
            self.emitPropertiesChanged(device.path, Simulator.deviceInterface, [("RSSI", .int16(device.rssi))])
            return
        }
        let current = self.bluez?.objects.property(device.path, interface: Simulator.deviceInterface, name: "RSSI")
        let old = current?.int64.map { Int16(clamping: $0) }
        // bluetoothd reports an RSSI change only when it moved by 8 dBm or more, unless duplicates are wanted.
        if let old, !self.wantsDuplicates(self.adapter(of: device)), abs(Int(old) - Int(device.rssi)) < 8 { return }
        device.rssiPresent = true
        self.setProperty(device.path, Simulator.deviceInterface, "RSSI", .int16(device.rssi))
    }
}
