import BlueZ
import CDBus
@testable import DBus
import E4
import EmpaLink
import Glibc
import Posix
import Spool

/// The seed inputs that cannot simply be copied from the repository, built from real encoders (`empalink-fuzz seeds
/// DIR`, run by `make fuzz-seeds` into Fuzz/corpus/): E4 notifications as the wristband sends them, captures of
/// them, spool segments and cursors as the spool writes them, D-Bus messages shaped like bluetoothd's, MQTT payloads
/// and commands from Docs/mqtt.md, an e4-server session. Configuration seeds are the shipped files themselves.
enum SeedCorpus {
    static func write(into root: String) -> CInt {
        var seeds: [(target: String, name: String, bytes: [UInt8])] = []
        seeds += self.profileSeeds().map { ("profiles", $0.0, $0.1) }
        seeds += self.captureSeeds().map { ("capture", $0.0, $0.1) }
        seeds += self.spoolSeeds().map { ("spool", $0.0, $0.1) }
        seeds += self.bluezSeeds().map { ("bluez", $0.0, $0.1) }
        seeds += self.payloadSeeds().map { ("payload", $0.0, $0.1) }
        seeds += self.commandSeeds().map { ("command", $0.0, Array($0.1.utf8)) }
        seeds += self.e4ServerSeeds().map { ("e4-server", $0.0, Array($0.1.utf8)) }
        for seed in seeds {
            let directory = root + "/" + seed.target
            mkdir(root, 0o755)
            mkdir(directory, 0o755)
            let path = directory + "/seed-" + seed.name
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            guard fd >= 0 else {
                Console.err("empalink-fuzz: cannot write \(path)")
                return 1
            }
            _ = seed.bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            close(fd)
        }
        Console.out("\(seeds.count) seeds written to \(root)")
        return 0
    }

    // MARK: E4 notifications

    /// `count` notifications of `stream`, with plausible values and counters advancing by one.
    static func packets(_ stream: E4Stream, count: Int) -> [[UInt8]] {
        var packets: [[UInt8]] = []
        var packet = E4PacketBytes()
        var bvpEncoder = E4BVPEncoder()
        for index in 0..<count {
            switch stream {
            case .bvp:
                var green = InlineArray<11, Int>(repeating: 0)
                var red = InlineArray<11, Int>(repeating: 0)
                for sample in 0..<E4BVP.samplesPerPacket {
                    let t = Double(index * E4BVP.samplesPerPacket + sample) / 64
                    let phase = (t / (60.0 / 70)).truncatingRemainder(dividingBy: 1)
                    let pulse = phase < 0.4 ? (1 - cos(2 * Double.pi * phase / 0.4)) / 2 : 0
                    green[sample] = Int(-250 * pulse)
                    red[sample] = Int(-150 * pulse)
                }
                bvpEncoder.encode(green: &green, red: &red, into: &packet)
            case .acc:
                var x = InlineArray<6, Int8>(repeating: 3)
                let y = InlineArray<6, Int8>(repeating: -2)
                let z = InlineArray<6, Int8>(repeating: 62)
                x[index % 6] = 4
                E4ACC.encode(x: x, y: y, z: z, counter: UInt16(truncatingIfNeeded: index), into: &packet)
            case .gsr:
                var codes = InlineArray<6, UInt32>(repeating: E4GSR.code(microsiemens: 4 + 0.01 * Double(index % 50)))
                E4GSR.encode(codes: &codes, counter: UInt16(truncatingIfNeeded: index), into: &packet)
            case .temp:
                let raw = InlineArray<8, UInt16>(repeating: E4Temperature.raw(celsius: 33.5 + 0.02 * Double(index % 10)))
                E4Temperature.encode(raw: raw, counter: UInt32(truncatingIfNeeded: index), into: &packet)
            case .battery:
                E4Battery.encode(percent: UInt8(95 - index % 50), into: &packet)
            case .tag:
                E4Control.encodeTag(into: &packet)
            }
            packets.append((0..<packet.count).map { packet[$0] })
        }
        return packets
    }

    static func channel(_ stream: E4Stream) -> UInt8 {
        UInt8(E4DeviceProfile().characteristics.firstIndex { $0.uuid == stream.characteristic } ?? 0)
    }

    /// Profile 0 (the E4), then (channel, length, value) frames.
    static func profileSeeds() -> [(String, [UInt8])] {
        var seeds: [(String, [UInt8])] = []
        for stream in E4Stream.allCases {
            var bytes: [UInt8] = [0]
            for packet in self.packets(stream, count: stream == .bvp ? 120 : 12) {
                bytes += [self.channel(stream), UInt8(packet.count)] + packet
            }
            seeds.append(("e4-\(stream.rawValue)", bytes))
        }
        var mixed: [UInt8] = [0]
        let streams = E4Stream.allCases.map { ($0, self.packets($0, count: 8)) }
        for index in 0..<8 {
            for (stream, packets) in streams { mixed += [self.channel(stream), UInt8(packets[index].count)] + packets[index] }
        }
        seeds.append(("e4-mixed", mixed))
        return seeds
    }

    static func captureSeeds() -> [(String, [UInt8])] {
        var capture: [UInt8] = []
        var micros: UInt64 = 1_764_426_000_000_000
        for stream in E4Stream.allCases {
            for packet in self.packets(stream, count: stream == .bvp ? 60 : 6) {
                let characteristic = UInt16(truncatingIfNeeded: stream.characteristic.uuid16 ?? 0)
                packet.withUnsafeBytes { payload in
                    try? E4Capture.append(arrivalMicros: micros, characteristic: characteristic, payload: payload,
                                          to: &capture)
                }
                micros += 15_625
            }
        }
        return [("mixed", capture)]
    }

    // MARK: Spool

    static func frame(sequence: UInt64, key: String, topic: String, message: String) -> [UInt8] {
        let size = SpoolFrame.frameSize(keyCount: key.utf8.count, topicCount: topic.utf8.count,
                                        messageCount: message.utf8.count)
        var bytes = [UInt8](repeating: 0, count: size)
        bytes.withUnsafeMutableBytes { destination in
            Array(key.utf8).withUnsafeBytes { key in
                Array(topic.utf8).withUnsafeBytes { topic in
                    Array(message.utf8).withUnsafeBytes { message in
                        _ = SpoolFrame.encode(into: destination, sequence: sequence,
                                              timestamp: 1_764_426_000_000 + Int64(sequence), key: key, topic: topic,
                                              message: message, qos: 1, retain: false)
                    }
                }
            }
        }
        return bytes
    }

    /// Kind 1 (segment 1), kind 2 (segment 2), kind 5 (the cursor), each framed; see ``SpoolFuzz``.
    static func spoolSeeds() -> [(String, [UInt8])] {
        var first: [UInt8] = []
        var second: [UInt8] = []
        for sequence in 0..<6 as Range<UInt64> {
            let stream = sequence % 2 == 0 ? "bvp" : "gsr"
            let frame = self.frame(sequence: sequence, key: "a1b2c3/\(stream)", topic: "P/board/a1b2c3/\(stream)",
                                   message: "{\"sid\":\"5f3c9a1e7b2d4c08\",\"seq\":\(sequence),\"v\":[1.5]}")
            if sequence < 4 { first += frame } else { second += frame }
        }
        let cursor = SpoolLedger(acknowledgedBelow: 2, acknowledged: [3], nextSequence: 6).encoded()
        let whole = [0x01] + FuzzFrame.chunk(first) + [0x02] + FuzzFrame.chunk(second) + [0x05] + FuzzFrame.chunk(cursor)
        let resealed = [0x81] + FuzzFrame.chunk(first) + [0x85] + FuzzFrame.chunk(cursor)
        let torn = [0x01] + FuzzFrame.chunk(Array(first.dropLast(7))) + [0x06] + FuzzFrame.chunk(cursor)
        return [("two-segments-cursor", whole), ("resealed", resealed), ("torn-tail", torn)]
    }

    // MARK: D-Bus

    static func marshal(_ message: DBusMessage) -> [UInt8] {
        dbus_message_set_serial(message.raw, 7)
        var buffer: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        guard dbus_message_marshal(message.raw, &buffer, &length) != 0, let buffer else { return [] }
        defer { dbus_free(buffer) }
        return (0..<Int(length)).map { UInt8(bitPattern: buffer[$0]) }
    }

    /// `a{sv}` of values already wrapped in variants (so a seed can also hold what BlueZ would never send).
    static func props(_ pairs: [(String, DBusValue)]) -> DBusValue {
        .dictionary(key: "s", value: "v", pairs.map { DBusValue.DictionaryEntry(.string($0.0), $0.1) })
    }

    static let devicePath = "/org/bluez/hci0/dev_00_07_80_9F_F1_67"

    static func deviceProperties(connected: Bool) -> DBusValue {
        Self.props([
            ("Address", .variant(.string("00:07:80:9F:F1:67"))), ("AddressType", .variant(.string("public"))),
            ("Name", .variant(.string("Empatica E4"))), ("RSSI", .variant(.int16(-58))),
            ("Connected", .variant(.boolean(connected))), ("ServicesResolved", .variant(.boolean(connected))),
            ("Adapter", .variant(.objectPath("/org/bluez/hci0"))),
            ("UUIDs", .variant(.strings(["00001800-0000-1000-8000-00805f9b34fb"]))),
        ])
    }

    static func managedObjects() -> DBusValue {
        var objects: [(String, DBusValue)] = [
            ("/org/bluez/hci0", DBusValue.interfaces([
                (BlueZNames.adapter, Self.props([
                    ("Address", .variant(.string("AA:BB:CC:DD:EE:01"))), ("Powered", .variant(.boolean(true))),
                    ("Discovering", .variant(.boolean(false))),
                ])),
                (BlueZNames.advertisementMonitorManager, Self.props([])),
            ])),
            (self.devicePath, DBusValue.interfaces([(BlueZNames.device, self.deviceProperties(connected: true))])),
            (self.devicePath + "/service000c", DBusValue.interfaces([(BlueZNames.gattService, Self.props([
                ("UUID", .variant(.string("00003eb0-0000-1000-8000-00805f9b34fb"))), ("Primary", .variant(.boolean(true))),
            ]))])),
        ]
        for (index, stream) in E4Stream.allCases.enumerated() {
            let path = self.devicePath + "/service000c/char" + String(0x0d + index * 3)
            objects.append((path, DBusValue.interfaces([(BlueZNames.gattCharacteristic, Self.props([
                ("UUID", .variant(.string(stream.characteristic.description))),
                ("Service", .variant(.objectPath(self.devicePath + "/service000c"))),
                ("Flags", .variant(.strings(["read", "notify"]))), ("Notifying", .variant(.boolean(false))),
                ("NotifyAcquired", .variant(.boolean(false))),
            ]))])))
        }
        return .dictionary(key: "o", value: "a{sa{sv}}", objects.map { DBusValue.DictionaryEntry(.objectPath($0.0), $0.1) })
    }

    static func bluezSeeds() -> [(String, [UInt8])] {
        var reply: [UInt8] = []
        if let raw = dbus_message_new(DBUS_MESSAGE_TYPE_METHOD_RETURN) {
            let message = DBusMessage(owning: raw)
            dbus_message_set_reply_serial(raw, 1)
            if (try? message.append([self.managedObjects()])) != nil { reply = self.marshal(message) }
        }
        func signal(_ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue]) -> [UInt8] {
            guard let message = try? DBusMessage.signal(path: path, interface: interface, member: member,
                                                        arguments: arguments) else { return [] }
            return self.marshal(message)
        }
        let added = signal("/", BlueZNames.objectManager, "InterfacesAdded", [
            .objectPath(self.devicePath + "_2"),
            DBusValue.interfaces([(BlueZNames.device, self.deviceProperties(connected: false))]),
        ])
        let changed = signal(self.devicePath, BlueZNames.properties, "PropertiesChanged", [
            .string(BlueZNames.device),
            Self.props([("RSSI", .variant(.int16(-71))), ("Connected", .variant(.boolean(false)))]),
            .strings(["ServicesResolved"]),
        ])
        let removed = signal("/", BlueZNames.objectManager, "InterfacesRemoved", [
            .objectPath(self.devicePath + "_2"), .strings([BlueZNames.device]),
        ])
        return [("managed-objects", reply), ("session", reply + added + changed + removed), ("added", added)]
    }

    // MARK: Text protocols

    static func payloadSeeds() -> [(String, [UInt8])] {
        let sid = "\"sid\":\"5f3c9a1e7b2d4c08\""
        let messages: [(UInt8, String)] = [
            (0, "{\"state\":\"online\",\"version\":\"0.1.0\",\"mode\":\"active\",\"clock_synced\":true}"),
            (1, "{\"9ff167\":{\"address\":\"00:07:80:9F:F1:67\",\"name\":\"Empatica E4\",\"rssi\":-58,\"allowed\":true}}"),
            (2, "{\"uptime_s\":3600.2,\"mode\":\"active\",\"clock_synced\":true,\"bluetooth\":\"ready\"}"),
            (3, "{\"status\":\"connected\",\"address\":\"00:07:80:9F:F1:67\",\"label\":\"bed 12\",\"rssi\":null,"
                + "\"battery\":0.83,\"since\":1764426000.125,\(sid)}"),
            (4, "{\(sid),\"seq\":412,\"t\":1764426103.015625,\"fs\":64,\"v\":[12.5,18.25,27.75,35.0,38.5,36.0]}"),
            (4, "{\(sid),\"seq\":414,\"t\":1764426103.109375,\"fs\":64,\"v\":[2.75,-4.5,-9.0]}"),
            (4, "{\(sid),\"seq\":413,\"t\":1764426103.109375,\"fs\":64,\"v\":[29.25,20.5,11.0]}"),
            (5, "{\(sid),\"seq\":103,\"t\":1764426103.0,\"fs\":4,\"v\":[0.412]}"),
            (6, "{\(sid),\"seq\":103,\"t\":1764426103.0,\"fs\":4,\"v\":[32.61]}"),
            (7, "{\(sid),\"seq\":412,\"t\":1764426103.03125,\"fs\":32,\"v\":[[-3,12,62],[-3,12,63],[-2,11,63]]}"),
            (8, "{\(sid),\"seq\":87,\"v\":[[1764426102.734375,0.828125]]}"),
            (9, "{\(sid),\"seq\":95,\"v\":[[1764426103.0,72.4]]}"),
            (10, "{\(sid),\"seq\":2,\"v\":[[1764426040.5,0.83]]}"),
            (11, "{\(sid),\"seq\":0,\"v\":[1764426101.9375]}"),
            (0, "{\"state\":\"offline\"}"),
        ]
        var all: [UInt8] = []
        var seeds: [(String, [UInt8])] = []
        for (index, (selector, payload)) in messages.enumerated() {
            let framed = [selector] + FuzzFrame.chunk(Array(payload.utf8))
            seeds.append(("message-\(index)", framed))
            all += framed
        }
        seeds.append(("all", all))
        return seeds
    }

    static func commandSeeds() -> [(String, String)] {
        [("background", "{\"mode\":\"background\"}"), ("resume", "{ \"mode\" : \"resume\" }"),
         ("rescan", "{\"rescan\":true}"), ("escapes", "{\"mode\":\"\\u0062ack\\ud83d\\ude00\\n\"}"),
         ("number", "{\"n\":-1.5e3,\"b\":false,\"z\":null}")]
    }

    static func e4ServerSeeds() -> [(String, String)] {
        [("session", "server_status\r\ndevice_discover_list\ndevice_list\ndevice_connect_btle a1b2c3 10\n"
            + "device_connect A1B2C3\ndevice_subscribe bvp ON\ndevice_subscribe ibi ON\npause ON\n"
            + "device_subscribe bat ON\npause OFF\ndevice_subscribe acc OFF\ndevice_subscribe xyz ON\n"
            + "device_disconnect_btle 0badc0\nbogus\n  \n\tdevice_disconnect\n"),
         ("unbound", "device_subscribe gsr ON\ndevice_disconnect\ndevice_connect ffffff\ndevice_connect_btle\n")]
    }
}

extension DBusValue {
    /// `a{sa{sv}}` from (interface, properties) pairs.
    static func interfaces(_ pairs: [(String, DBusValue)]) -> DBusValue {
        .dictionary(key: "s", value: "a{sv}", pairs.map { DictionaryEntry(.string($0.0), $0.1) })
    }
}
