import DBus

/// `org.empalink.Simulator1` at `/org/empalink/simulator` on its own connection (`org.empalink.Simulator`):
/// tests trigger faults and read counters here while the BlueZ face comes and goes. Methods without an adapter
/// argument act on `hci0`; `SetAdapterPowered` and `PowerCycleAdapter` name one (`""` is `hci0`).
extension Simulator {
    static let controlErrorPrefix = "org.empalink.Simulator.Error."

    func exportControl(on connection: DBusConnection) throws(DBusError) {
        func run(_ call: DBusMethodCall, _ action: FaultAction) {
            if let problem = self.apply(action) {
                call.fail(DBusError(name: Simulator.controlErrorPrefix + "InvalidArguments", message: problem))
            } else {
                call.reply()
            }
        }
        func text(_ call: DBusMethodCall, _ index: Int) -> String { call.arguments[index].string ?? "" }
        // Peers may send NaN or infinities: clamp to a finite range before anything converts them to integers.
        func number(_ call: DBusMethodCall, _ index: Int) -> Double {
            guard let value = call.arguments[index].double, value.isFinite else { return 0 }
            return min(max(value, -1e6), 1e6)
        }
        let methods: [DBusMethod] = [
            DBusMethod("Disconnect", in: "s") { call in run(call, .disconnect(device: text(call, 0))) },
            DBusMethod("SetOutOfRange", in: "sd") { call in
                run(call, .outOfRange(device: text(call, 0), seconds: number(call, 1)))
            },
            DBusMethod("SetPacketLoss", in: "sd") { call in
                run(call, .packetLoss(device: text(call, 0), rate: number(call, 1)))
            },
            DBusMethod("SetCorruption", in: "sd") { call in
                run(call, .corruption(device: text(call, 0), rate: number(call, 1)))
            },
            DBusMethod("SetPowered", in: "b") { [weak self] call in
                guard let self else { return }
                self.setPowered(call.arguments[0].bool ?? true, self.adapters[0])
                call.reply()
            },
            DBusMethod("PowerCycle", in: "d") { call in
                run(call, .powerOff(seconds: max(number(call, 0), 0.001)))
            },
            DBusMethod("SetAdapterPowered", in: "sb") { [weak self] call in
                guard let self else { return }
                guard let index = self.adapterIndex(call, text(call, 0)) else { return }
                self.setPowered(call.arguments[1].bool ?? true, self.adapters[index])
                call.reply()
            },
            DBusMethod("PowerCycleAdapter", in: "sd") { [weak self] call in
                guard let self, let index = self.adapterIndex(call, text(call, 0)) else { return }
                run(call, .powerOff(seconds: max(number(call, 1), 0.001), adapter: index))
            },
            DBusMethod("RestartService", in: "d") { call in run(call, .restart(seconds: number(call, 0))) },
            DBusMethod("PressTag", in: "s") { call in run(call, .tag(device: text(call, 0))) },
            DBusMethod("InjectError", in: "sssu") { call in
                let count = Int(call.arguments[3].int64 ?? 0)
                run(call, .error(method: text(call, 0), name: text(call, 1), message: text(call, 2), count: count))
            },
            DBusMethod("Stats", out: "a{sv}") { [weak self] call in
                guard let self else { return }
                call.reply([self.statistics()])
            },
        ]
        try connection.objects.export(Simulator.controlPath, interfaces: [
            DBusInterface(name: Simulator.controlInterface, properties: [
                ("Devices", DBusProperty(.uint32(UInt32(self.wristbands.count)))),
            ], methods: methods + self.wardControlMethods(text: text, number: number)),
        ])
    }

    /// The adapter `name` names on this board (`""` is `hci0`), or `nil` with `call` failed.
    func adapterIndex(_ call: DBusMethodCall, _ name: String) -> Int? {
        if let index = SimulatedAdapter.index(named: name, count: self.adapters.count) { return index }
        call.fail(DBusError(name: Simulator.controlErrorPrefix + "InvalidArguments",
                            message: "no adapter '\(name)' (the board has hci0 to hci\(self.adapters.count - 1))"))
        return nil
    }

    /// Counters and state for the `Stats` method. With several adapters each wristband is shown through the view
    /// holding its link (else `hci0`'s) with an `adapter` key, and `adapters` has each adapter's state.
    func statistics() -> DBusValue {
        let now = self.now
        let several = self.adapters.count > 1
        let shown = self.wristbands.map { device in
            several ? self.siblings(of: device).first { $0.state != .disconnected } ?? device : device
        }
        let devices = shown.map { device -> DBusValue.DictionaryEntry in
            var notifications: UInt64 = 0
            for characteristic in device.characteristics { notifications += characteristic.notifications }
            let properties: [(String, DBusValue)] = [
                ("address", .string(device.addressString)),
                ("path", .objectPath(device.path)),
                ("heart_rate", .double(device.physiology.parameters.heartRate)),
                ("exported", .boolean(device.exported)),
                ("connected", .boolean(device.state == .connected)),
                ("streaming", .boolean(device.state == .connected && device.session != nil)),
                ("in_range", .boolean(device.isInRange(at: now) && self.wardReachable(device, at: now))),
                ("rssi", .int16(device.rssi)),
                ("connects", .uint32(UInt32(clamping: device.connects))),
                ("sessions", .uint32(UInt32(clamping: device.sessions))),
                ("notifications", .uint64(notifications)),
                ("lost", .uint64(device.lost)),
                ("corrupted", .uint64(device.corrupted)),
                ("overflowed", .uint64(device.overflowed)),
                ("packet_loss", .double(device.packetLoss)),
                ("corruption", .double(device.corruption)),
            ]
            let adapter: [(String, DBusValue)] = several ? [("adapter", .string(self.adapter(of: device).name))] : []
            return .init(.string(device.serial),
                         .properties(properties + adapter + self.wardDeviceStatistics(device, at: now)))
        }
        let hci0 = self.adapters[0]
        let properties: [(String, DBusValue)] = [
            ("uptime", .double(now)),
            ("service_up", .boolean(self.serviceUp)),
            ("bus_name_owner", .string(self.bluez?.uniqueName ?? "")),
            ("restarts", .uint32(UInt32(clamping: self.restarts))),
            ("powered", .boolean(hci0.powered)),
            ("discovering", .boolean(hci0.discoveringSince != nil)),
            ("discovering_seconds", .double(self.discoveringSeconds(hci0))),
            ("discovery_sessions", .uint32(UInt32(clamping: hci0.discoverySessions.count))),
            ("start_discovery_calls", .uint32(UInt32(clamping: self.startDiscoveryCalls))),
            ("connect_calls", .uint32(UInt32(clamping: self.connectCalls))),
            ("duplicate_data_uses", .uint32(UInt32(clamping: self.duplicateDataUses))),
            ("discoverable_uses", .uint32(UInt32(clamping: self.discoverableUses))),
            ("monitors", .uint32(UInt32(clamping: hci0.monitors.count))),
            ("faults_applied", .uint32(UInt32(clamping: self.faultsApplied))),
            ("subscribing", .uint32(UInt32(clamping: self.subscribing.values.reduce(0, +)))),
            ("left_while_subscribing", .uint32(UInt32(clamping: self.departedWhileSubscribing.count))),
            ("devices", .dictionary(key: "s", value: "a{sv}", devices)),
        ]
        return .properties(properties + (several ? [("adapters", self.adapterStatistics(at: now))] : [])
            + self.wardStatistics())
    }

    /// `Stats` `adapters` (several adapters only): by name, each adapter's address, power, discovery, monitors and
    /// its view of every wristband (path, exported, connected, RSSI).
    func adapterStatistics(at now: Double) -> DBusValue {
        .dictionary(key: "s", value: "a{sv}", self.adapters.map { adapter in
            let views = self.devices.filter { $0.adapterIndex == adapter.index }.map { device in
                DBusValue.DictionaryEntry(.string(device.serial), .properties([
                    ("path", .objectPath(device.path)),
                    ("exported", .boolean(device.exported)),
                    ("connected", .boolean(device.state == .connected)),
                    ("rssi", .int16(device.rssi)),
                ]))
            }
            return .init(.string(adapter.name), .properties([
                ("address", .string(adapter.address)),
                ("path", .objectPath(adapter.path)),
                ("powered", .boolean(adapter.powered)),
                ("discovering", .boolean(adapter.discoveringSince != nil)),
                ("discovering_seconds", .double(self.discoveringSeconds(adapter))),
                ("discovery_sessions", .uint32(UInt32(clamping: adapter.discoverySessions.count))),
                ("monitors", .uint32(UInt32(clamping: adapter.monitors.count))),
                ("devices", .dictionary(key: "s", value: "a{sv}", views)),
            ]))
        })
    }
}
