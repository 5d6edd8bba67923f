#if canImport(Glibc)
import Glibc
#endif
import DBus
import E4
import EventLoop
import Posix

/// The `[[hostile]]` switches (``HostileBehaviour``): a bluetoothd that answers and signals what BlueZ never would,
/// per wristband, so that tests can show a client surviving it while the other wristbands stream on.
extension Simulator {
    static let objectManagerInterface = "org.freedesktop.DBus.ObjectManager"
    static let propertiesInterface = "org.freedesktop.DBus.Properties"
    /// How often the flood and the malformed signals are sent (they are spread over the second).
    static let hostileTick = Duration.milliseconds(50)

    /// Resolves each `[[hostile]]` entry to its devices (a later entry naming a device wins) and starts the timers
    /// of the switches that act by themselves.
    ///
    /// - Throws: the loop's error when a timer cannot be scheduled.
    func startHostile() throws(Errno) {
        for entry in self.scenario.hostile {
            for device in self.devices(matching: entry.device) { self.hostileDevices[device.index] = entry }
        }
        guard !self.hostileDevices.isEmpty else { return }
        for (index, entry) in self.hostileDevices.sorted(by: { $0.key < $1.key }) {
            self.logger.info("device \(index) is hostile: \(entry)")
        }
        let signalling = self.hostileDevices.values.contains {
            $0.propertiesFloodPerSecond > 0 || $0.malformedSignalsPerSecond > 0
        }
        if signalling {
            let tick = Self.hostileTick
            self.hostileTimers.append(try self.loop.scheduleTimer(after: tick, repeating: tick) { [weak self] in
                self?.hostileTickFired()
            })
        }
        for (index, entry) in self.hostileDevices where entry.vanishSeconds > 0 {
            let period = Duration.microseconds(Int64(entry.vanishSeconds * 1e6))
            self.hostileTimers.append(try self.loop.scheduleTimer(after: period, repeating: period) { [weak self] in
                guard let self, let device = self.devices.first(where: { $0.index == index }) else { return }
                self.vanishAndReturn(device)
            })
        }
    }

    func stopHostile() {
        for timer in self.hostileTimers { _ = self.loop.cancel(timer) }
        self.hostileTimers = []
    }

    func hostile(_ device: SimulatedDevice) -> HostileBehaviour? {
        self.hostileDevices[device.index]
    }

    // MARK: Wrong types

    /// `Device1` with every property of a type BlueZ never sends.
    static func wrongTypedDeviceProperties(_ device: SimulatedDevice) -> [(String, DBusProperty)] {
        [
            ("Address", DBusProperty(.int32(Int32(device.index)))),
            ("AddressType", DBusProperty(.uint32(7))),
            ("Name", DBusProperty(.bytes(Array(device.name.utf8)))),
            ("Alias", DBusProperty(.array(element: "s", [.string(device.name)]))),
            ("Paired", DBusProperty(.string("no"))),
            ("RSSI", DBusProperty(.string("-60 dBm"))),
            ("Connected", DBusProperty(.string("false"))),
            ("UUIDs", DBusProperty(.string(SimulatedCharacteristic.uuid128(0x3EA0)))),
            ("Adapter", DBusProperty(.int64(0))),
            ("ManufacturerData", DBusProperty(.string("\u{FFFF}\u{7F}"))),
            ("ServicesResolved", DBusProperty(.double(1))),
            ("AdvertisingFlags", DBusProperty(.structure([.byte(6), .string("x")]))),
        ]
    }

    // MARK: AcquireNotify

    /// Answers `AcquireNotify` as the device's hostile entry says; `false` when it says nothing about it.
    func hostileAcquireNotify(_ characteristic: SimulatedCharacteristic, _ device: SimulatedDevice,
                              _ call: DBusMethodCall) -> Bool {
        guard let entry = self.hostile(device), entry.acquireNotifyMTU != nil || entry.notifySocket != .seqpacket
        else { return false }
        let pair: (FileDescriptor, FileDescriptor)
        do throws(Errno) {
            switch entry.notifySocket {
            case .seqpacket:
                pair = try FileDescriptor.socketPair(type: CInt(SOCK_SEQPACKET.rawValue), nonBlocking: true)
            case .stream: pair = try FileDescriptor.socketPair(type: CInt(SOCK_STREAM.rawValue), nonBlocking: true)
            case .datagram: pair = try FileDescriptor.socketPair(type: CInt(SOCK_DGRAM.rawValue), nonBlocking: true)
            case .pipe:
                // The client gets the read end; we write into the other.
                let ends = try FileDescriptor.pipe(nonBlocking: true)
                pair = (ends.writeEnd, ends.readEnd)
            }
        } catch {
            call.fail(BlueZError.failed("Failed to create socket pair: \(error)"))
            return true
        }
        do throws(Errno) {
            // The client's close (or a refusal) must release it, as for a real acquisition: a pipe's write end
            // reports an error, a socket a hang-up.
            characteristic.notifyRegistration = try self.loop.register(pair.0, interest: [.readable, .readHangup]) {
                [weak self, weak characteristic] _ in
                if let self, let characteristic { self.notifySocketEvent(characteristic) }
            }
        } catch {
            pair.0.close()
            pair.1.close()
            call.fail(BlueZError.failed("Failed to watch socket: \(error)"))
            return true
        }
        characteristic.notifyFD = pair.0
        characteristic.notifyOwner = call.sender
        let mtu: DBusValue = entry.acquireNotifyMTU.map { .int64($0) } ?? .uint16(self.scenario.bluetoothd.attMTU)
        call.reply([.unixFD(pair.1.rawValue), mtu])
        pair.1.close()
        self.setCharacteristic(characteristic, "NotifyAcquired", .boolean(true))
        return true
    }

    // MARK: Oversized notifications

    /// Sends `bytes` padded to the hostile size, to the acquired fd (or as `PropertiesChanged(Value)`); `false` when
    /// the device sends normal notifications.
    func transmitOversized(_ device: SimulatedDevice, _ characteristic: SimulatedCharacteristic,
                           _ bytes: E4PacketBytes) -> Bool {
        guard let size = self.hostile(device)?.oversizedNotifications, size > 0 else { return false }
        var value = bytes.withUnsafeBytes { Array($0) }
        value += [UInt8](repeating: 0xA5, count: max(0, size - value.count))
        if let fd = characteristic.notifyFD {
            let sent = value.withUnsafeBytes { write(fd.rawValue, $0.baseAddress, $0.count) }
            if sent < 0, errno == EAGAIN { device.overflowed += 1 }
        }
        if !characteristic.notifyClients.isEmpty {
            self.emitPropertiesChanged(characteristic.path, Simulator.characteristicInterface,
                                       [("Value", .bytes(value))])
        }
        return true
    }

    // MARK: Floods and malformed signals

    func hostileTickFired() {
        guard let connection = self.bluez else { return }
        let perTick = 1.0 / (1000.0 / 50.0)
        for (index, entry) in self.hostileDevices {
            guard let device = self.devices.first(where: { $0.index == index }), device.exported else { continue }
            let flood = Int((Double(entry.propertiesFloodPerSecond) * perTick).rounded(.up))
            for n in 0..<(entry.propertiesFloodPerSecond > 0 ? flood : 0) {
                self.emitPropertiesChanged(device.path, Simulator.deviceInterface, [
                    ("RSSI", .int16(Int16(-40 - (n % 50)))),
                    ("ManufacturerData", .dictionary(key: "q", value: "v", [
                        .init(.uint16(0xFFFF), .variant(.bytes(device.manufacturerPayload))),
                    ])),
                    ("Flood", .uint32(UInt32(truncatingIfNeeded: n))),
                ])
            }
            let malformed = Int((Double(entry.malformedSignalsPerSecond) * perTick).rounded(.up))
            for n in 0..<(entry.malformedSignalsPerSecond > 0 ? malformed : 0) {
                let (path, interface, member, arguments) = Self.malformedSignal(n, device)
                try? connection.emitSignal(path: path, interface: interface, member: member, arguments: arguments)
            }
        }
    }

    /// The `n`-th of a cycle of signals with BlueZ's names and the wrong shapes.
    static func malformedSignal(_ n: Int, _ device: SimulatedDevice)
        -> (path: String, interface: String, member: String, arguments: [DBusValue])
    {
        let path = device.path
        switch n % 7 {
        case 0: return (path, Self.propertiesInterface, "PropertiesChanged", [])
        case 1: return (path, Self.propertiesInterface, "PropertiesChanged", [.int32(1), .string("x")])
        case 2: return (path, Self.propertiesInterface, "PropertiesChanged",
                        [.string(Simulator.deviceInterface), .strings(["RSSI"]), .strings([])])
        case 3: return (path, Self.propertiesInterface, "PropertiesChanged",
                        [.string(Simulator.deviceInterface), .properties([("Address", .uint64(1)),
                                                                         ("UUIDs", .int32(5))]), .int32(0)])
        case 4: return ("/", Self.objectManagerInterface, "InterfacesAdded", [.objectPath(path)])
        case 5: return ("/", Self.objectManagerInterface, "InterfacesAdded",
                        [.objectPath(path), .properties([("org.bluez.Device1", .string("gone"))])])
        default: return ("/", Self.objectManagerInterface, "InterfacesRemoved", [.objectPath(path), .int32(3)])
        }
    }

    // MARK: Vanishing and duplicate objects

    /// The device's `Device1` vanishes in clients' eyes and is announced again, twice, 100 ms later.
    func vanishAndReturn(_ device: SimulatedDevice) {
        guard let connection = self.bluez, device.exported else { return }
        try? connection.emitSignal(path: "/", interface: Self.objectManagerInterface, member: "InterfacesRemoved",
                                   arguments: [.objectPath(device.path), .strings([Simulator.deviceInterface])])
        self.after(milliseconds: 100) { [weak self, weak device] in
            guard let self, let device, device.exported, let connection = self.bluez else { return }
            let names = ["Address", "AddressType", "Name", "Alias", "Paired", "Trusted", "Blocked", "LegacyPairing",
                         "RSSI", "Connected", "UUIDs", "Adapter", "ManufacturerData", "ServicesResolved",
                         "AdvertisingFlags"]
            let properties = names.compactMap { name in
                connection.objects.property(device.path, interface: Simulator.deviceInterface, name: name)
                    .map { (name, $0) }
            }
            let added = DBusValue.dictionary(key: "s", value: "a{sv}", [
                .init(.string(Simulator.deviceInterface), .properties(properties)),
            ])
            for _ in 0..<2 {
                try? connection.emitSignal(path: "/", interface: Self.objectManagerInterface,
                                           member: "InterfacesAdded", arguments: [.objectPath(device.path), added])
            }
        }
    }

    // MARK: A name owner that changes mid-call

    /// While `call` is in flight, a second connection takes `org.bluez` over (a single `NameOwnerChanged` from the
    /// old unique name to the new one) and serves a fresh tree; the old connection, which no longer owns the name,
    /// then answers `call` late or never.
    func changeOwnerMidCall(_ call: DBusMethodCall, _ device: SimulatedDevice) {
        guard let old = self.bluez, let entry = self.hostile(device) else {
            return call.fail(BlueZError.failed("org.bluez is down"))
        }
        self.ownerChangedMidCall = true
        self.restarts += 1
        let member = call.message.member ?? "?"
        self.logger.info("org.bluez changes owner in the middle of \(member) on device \(device.index) "
                         + "(stale reply: \(entry.staleReply.rawValue))")
        self.bringBlueZDown(close: false)
        self.staleOwners.append(old)
        do {
            try self.bringBlueZUp(replacing: true)
        } catch {
            self.logger.error("cannot take \(Simulator.busName) over: \(error)")
        }
        switch entry.staleReply {
        case .late:
            self.after(milliseconds: 500) { [weak self] in
                call.reply()
                self?.logger.info("the old owner \(old.uniqueName) answered \(call.message.member ?? "?")")
            }
        case .never:
            // Held, unanswered (a dropped call would be answered Failed), until the simulator stops.
            self.staleCalls.append(call)
        }
    }
}
