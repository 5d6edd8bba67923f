#if canImport(Glibc)
import Glibc
#endif
import DBus
import E4
import Foundation
import Testing
import TestSupport

@testable import Simulator

/// The peripheral face against a stand-in for bluetoothd's manager side on a private bus: what it registers, how it
/// answers bluetoothd's calls, the packets it streams and their truth, and how it fails.
@Suite(.serialized) struct PeripheralTests {
    static let characteristicInterface = "org.bluez.GattCharacteristic1"

    static func uuid(_ uuid16: UInt16) -> String { SimulatedCharacteristic.uuid128(uuid16) }

    // MARK: Registration

    @Test func registersTheE4ProfileAndAdvertisementOnceTheAdapterIsPowered() throws {
        let h = try PeripheralHarness(powered: false)
        defer { h.close() }
        try h.bluetoothd.start()
        let peripheral = try h.startPeripheral()
        #expect(h.wait { peripheral.registration == .registered }, "\(String(describing: h.failure))")
        #expect(h.bluetoothd.powerRequests == 1)
        // The GAP Device Name a connected central reads is the adapter's alias.
        #expect(h.bluetoothd.connection?.objects.property(h.bluetoothd.adapterPath, interface: "org.bluez.Adapter1",
                                                          name: "Alias") == .string("Empatica E4"))
        #expect(h.bluetoothd.powered)
        #expect(h.bluetoothd.applicationPath == PeripheralSimulator.appRoot)

        let tree = h.bluetoothd.applicationTree
        let services = tree.compactMapValues { $0["org.bluez.GattService1"] }
        #expect(Set(services.values.compactMap { $0["UUID"]?.string }) == [Self.uuid(0x3EA0), Self.uuid(0x3EB0),
                                                                          Self.uuid(0x3E70)])
        #expect(services.values.allSatisfy { $0["Primary"] == .boolean(true) })

        let expectedFlags: [UInt16: [String]] = [
            0x3EA1: ["notify"], 0x3EA3: ["notify"], 0x3EA6: ["notify"], 0x3EA8: ["notify"],
            0x3EB2: ["notify"], 0x3EB3: ["read", "notify"], 0x3E71: ["write"],
        ]
        let parents: [UInt16: UInt16] = [0x3EA1: 0x3EA0, 0x3EA3: 0x3EA0, 0x3EA6: 0x3EA0, 0x3EA8: 0x3EA0,
                                         0x3EB2: 0x3EB0, 0x3EB3: 0x3EB0, 0x3E71: 0x3E70]
        let characteristics = tree.compactMapValues { $0[Self.characteristicInterface] }
        #expect(characteristics.count == 7)
        for (uuid16, flags) in expectedFlags {
            let found = characteristics.values.first { $0["UUID"]?.string == Self.uuid(uuid16) }
            guard let properties = found else {
                Issue.record("characteristic \(Self.uuid(uuid16)) missing")
                continue
            }
            #expect(properties["Flags"] == .strings(flags), "flags of \(uuid16)")
            let service = properties["Service"]?.string ?? ""
            #expect(services[service]?["UUID"]?.string == Self.uuid(parents[uuid16] ?? 0), "service of \(uuid16)")
            // NotifyAcquired present ⇔ bluetoothd subscribes with AcquireNotify.
            #expect((properties["NotifyAcquired"] != nil) == flags.contains("notify"), "NotifyAcquired of \(uuid16)")
            #expect(properties["Handle"] == nil)
        }
        #expect(characteristics.values.first { $0["UUID"]?.string == Self.uuid(0x3EB3) }?["Value"] != nil)

        let advertisement = h.bluetoothd.advertisement
        #expect(advertisement["Type"] == .string("peripheral"))
        #expect(advertisement["LocalName"] == .string("Empatica E4"))
        #expect(advertisement["ServiceUUIDs"] == .strings([Self.uuid(0x3EA0)]))
        #expect(advertisement["Discoverable"] == .boolean(true))
        // Legacy advertising: flags (3) + each 128-bit UUID (18) + manufacturer data (4 + payload) ≤ 31; the name
        // goes to the scan response (2 + name) ≤ 31.
        let uuids = advertisement["ServiceUUIDs"]?.arrayElements?.count ?? 0
        var manufacturer = 0
        for (_, value) in advertisement["ManufacturerData"].flatMap({ entries($0) }) ?? [] {
            manufacturer += 4 + (value.bytes?.count ?? 0)
        }
        #expect(3 + 18 * uuids + manufacturer <= 31)
        #expect(2 + "Empatica E4".utf8.count <= 31)
        // The wristband's identity is the adapter's address.
        #expect(peripheral.device?.addressString == h.bluetoothd.address)
        #expect(FileManager.default.fileExists(atPath: h.truthDirectory + "/" + h.serial + "/sessions.csv"))

        // bluetoothd calls Release when it drops the advertisement (adapter gone, or exiting).
        #expect(h.errorName(h.call(PeripheralSimulator.advertisementPath, "org.bluez.LEAdvertisement1", "Release"))
            == nil)
        #expect(!peripheral.advertisementRegistered)
    }

    func entries(_ value: DBusValue) -> [(DBusValue, DBusValue)]? {
        guard case .dictionary(_, _, let entries) = value.unwrapped else { return nil }
        return entries.map { ($0.key, $0.value.unwrapped) }
    }

    @Test func registersAgainWhenBluetoothdRestarts() throws {
        let h = try PeripheralHarness()
        defer { h.close() }
        let peripheral = try h.startRegistered()
        h.bluetoothd.stop()
        #expect(h.wait { peripheral.registration == .waitingForBlueZ })
        try h.bluetoothd.start()
        #expect(h.wait { peripheral.registration == .registered })
        #expect(h.bluetoothd.applicationRegistrations == 2)
        #expect(h.bluetoothd.advertisementRegistrations == 2)
        #expect(h.bluetoothd.applicationTree.count == 10)
        #expect(h.failure == nil)
    }

    @Test func registersAgainWhenTheAdapterReturns() throws {
        let h = try PeripheralHarness()
        defer { h.close() }
        let peripheral = try h.startRegistered()
        h.bluetoothd.removeAdapter()
        #expect(h.wait { peripheral.registration == .waitingForAdapter })
        try h.bluetoothd.exportAdapter()
        #expect(h.wait { peripheral.registration == .registered })
        #expect(h.bluetoothd.applicationRegistrations == 2)
        #expect(h.failure == nil)
    }

    @Test func waitsForTheAdvertisingManagerBeforeAdvertising() throws {
        let h = try PeripheralHarness()
        defer { h.close() }
        try h.bluetoothd.start(advertising: false)
        let peripheral = try h.startPeripheral()
        #expect(h.wait { h.bluetoothd.applicationRegistrations == 1 && !h.bluetoothd.applicationTree.isEmpty })
        h.run(for: 0.1)
        #expect(peripheral.registration == .registering)
        #expect(h.bluetoothd.advertisementRegistrations == 0)
        try h.bluetoothd.exportAdvertisingManager()
        #expect(h.wait { peripheral.registration == .registered })
        #expect(h.bluetoothd.applicationRegistrations == 1)
        #expect(h.bluetoothd.advertisementRegistrations == 1)
    }

    @Test func anAdapterWithoutAdvertisingFailsAfterTheTimeout() throws {
        let h = try PeripheralHarness()
        defer { h.close() }
        try h.bluetoothd.start(advertising: false)
        _ = try h.startPeripheral(adapterTimeout: .milliseconds(300))
        #expect(h.wait { h.failure != nil })
        #expect(h.failure?.message.hasPrefix("adapter hci0 offered no org.bluez.LEAdvertisingManager1 within 0.3 s")
            == true, "\(String(describing: h.failure))")
    }

    @Test func aPowerOffWhileServingEndsTheSessionAndKeepsTheRegistration() throws {
        let h = try PeripheralHarness()
        defer { h.close() }
        let peripheral = try h.startRegistered()
        try h.bluetoothd.connectCentral(PeripheralHarness.central)
        let reader = try self.acquire(h, 0x3EA1)
        defer { reader.close() }
        #expect(h.errorName(h.writeStart()) == nil)
        #expect(h.wait { reader.packets.count >= 2 })
        // bluetoothd on power-off: Powered false, the link drops.
        h.bluetoothd.connection?.objects.setProperty(h.bluetoothd.adapterPath, interface: "org.bluez.Adapter1",
                                                     name: "Powered", value: .boolean(false))
        h.bluetoothd.disconnectCentral(PeripheralHarness.central)
        #expect(h.wait { peripheral.device?.session == nil })
        h.run(for: 0.1)
        #expect(peripheral.registration == .registered)
        #expect(h.bluetoothd.powerRequests == 0)
        #expect(h.bluetoothd.applicationRegistrations == 1)
        #expect(h.failure == nil)
    }

    @Test func anAdapterThatNeverAppearsFailsAfterTheTimeout() throws {
        let h = try PeripheralHarness()
        defer { h.close() }
        try h.bluetoothd.start()
        let peripheral = try h.startPeripheral(adapter: "hci3", adapterTimeout: .milliseconds(300))
        #expect(h.wait { h.failure != nil })
        #expect(peripheral.registration == .waitingForAdapter)
        #expect(h.failure?.message.contains("adapter hci3 did not appear") == true)
        #expect(h.bluetoothd.applicationRegistrations == 0)
    }

    // MARK: Streaming

    /// Acquires notifications of `uuid16` as bluetoothd does; returns a reader of the fd.
    func acquire(_ h: PeripheralHarness, _ uuid16: UInt16) throws -> NotifyReader {
        let path = try #require(h.characteristicPath(uuid16))
        let result = h.call(path, Self.characteristicInterface, "AcquireNotify", [h.options(mtu: 23)])
        guard case .success(let values) = result, values.count == 2, case .unixFD(let fd) = values[0] else {
            Issue.record("AcquireNotify \(uuid16) failed: \(result)")
            throw DBusError(name: "test.AcquireFailed", message: "\(result)")
        }
        #expect(values[1] == .uint16(23))
        var type: CInt = 0
        var length = socklen_t(MemoryLayout<CInt>.size)
        getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length)
        #expect(type == CInt(SOCK_SEQPACKET.rawValue))
        return try NotifyReader(fd: fd, loop: h.loop)
    }

    @Test func acquiredFdsCarryPacketsThatDecodeToTheTruth() throws {
        let h = try PeripheralHarness()
        defer { h.close() }
        let peripheral = try h.startRegistered()
        try h.bluetoothd.connectCentral(PeripheralHarness.central)
        var readers: [UInt16: NotifyReader] = [:]
        for uuid in [UInt16(0x3EA1), 0x3EA3, 0x3EA6, 0x3EA8, 0x3EB3] {
            readers[uuid] = try self.acquire(h, uuid)
        }
        defer { for reader in readers.values { reader.close() } }
        let bvpPath = try #require(h.characteristicPath(0x3EA1))
        #expect(peripheral.characteristic(0x3EA1)?.notifyFD != nil)
        #expect(h.call(bvpPath, "org.freedesktop.DBus.Properties", "Get",
                       [.string(Self.characteristicInterface), .string("NotifyAcquired")])
            == .success([.variant(.boolean(true))]))
        #expect(h.errorName(h.writeStart()) == nil)
        #expect(peripheral.device?.session?.number == 1)
        #expect(h.wait { (readers[0x3EA8]?.packets.count ?? 0) >= 2 })

        let bvp = try #require(readers[0x3EA1]).packets
        #expect(bvp.count >= 10)
        #expect(bvp.allSatisfy { $0.count == 20 })
        var decoder = E4BVPDecoder()
        var greens: [Int64] = []
        var values: [Float] = []
        for packet in bvp {
            var decoded = E4BVPPacket()
            _ = try packet.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws(E4DecodeError) in
                try decoder.decode(raw, into: &decoded)
            }
            for i in 0..<11 {
                greens.append(decoded.green[i])
                values.append(decoded.value[i])
            }
        }
        #expect(decoder.statistics.lostPackets == 0)
        let truth = h.truthRows("bvp.csv")
        #expect(truth.count >= greens.count)
        for (index, row) in truth.prefix(greens.count).enumerated() {
            #expect(Int64(row[2]) == greens[index], "green of sample \(index)")
            #expect(Float(row[1]) == values[index], "value of sample \(index)")
            #expect(row[5] == "1" && row[6] == "0")
        }

        var accDecoder = E4ACCDecoder()
        var xs: [Int8] = []
        for packet in try #require(readers[0x3EA3]).packets {
            var decoded = E4ACCPacket()
            _ = try packet.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws(E4DecodeError) in
                try accDecoder.decode(raw, into: &decoded)
            }
            for i in 0..<6 { xs.append(decoded.x[i]) }
        }
        #expect(!xs.isEmpty)
        #expect(h.truthRows("acc.csv").prefix(xs.count).map { Int8($0[1]) } == xs)

        var gsrDecoder = E4GSRDecoder()
        var codes: [UInt32] = []
        for packet in try #require(readers[0x3EA8]).packets {
            var decoded = E4GSRPacket()
            _ = try packet.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws(E4DecodeError) in
                try gsrDecoder.decode(raw, into: &decoded)
            }
            for i in 0..<6 { codes.append(decoded.codes[i]) }
        }
        #expect(h.truthRows("gsr.csv").prefix(codes.count).map { UInt32($0[1]) } == codes)

        // The battery is notified once at the start of a session, with the percent a read returns.
        let battery = try #require(readers[0x3EB3]).packets
        #expect(battery.count == 1)
        #expect(battery.first?.count == 1)
        let read = h.call(try #require(h.characteristicPath(0x3EB3)), Self.characteristicInterface, "ReadValue",
                          [h.options()])
        guard case .success(let readValues) = read, let percent = readValues.first?.bytes?.first else {
            Issue.record("ReadValue failed: \(read)")
            return
        }
        #expect(battery.first?.first == percent)
        #expect(h.truthRows("battery.csv").first?[1] == String(percent))

        let sessions = h.truthRows("sessions.csv")
        #expect(sessions.count == 1)
        #expect(sessions.first?[0] == "1")
        #expect(sessions.first?[2] == h.bluetoothd.address)
    }

    @Test func theCentralDisconnectingEndsTheSessionAndTheNextStartBeginsAnother() throws {
        let h = try PeripheralHarness()
        defer { h.close() }
        let peripheral = try h.startRegistered()
        try h.bluetoothd.connectCentral(PeripheralHarness.central)
        let first = try self.acquire(h, 0x3EA1)
        #expect(h.errorName(h.writeStart()) == nil)
        #expect(h.wait { first.packets.count >= 3 })
        #expect(peripheral.centrals.count == 1)

        h.bluetoothd.disconnectCentral(PeripheralHarness.central)
        #expect(h.wait { peripheral.device?.session == nil })
        #expect(peripheral.centrals.isEmpty)
        // bluetoothd closes its end when the central's CCC state is cleared.
        first.close()
        #expect(h.wait { peripheral.characteristic(0x3EA1)?.notifyFD == nil })

        h.bluetoothd.connection?.objects.setProperty(h.bluetoothd.devicePath(PeripheralHarness.central),
                                                     interface: "org.bluez.Device1", name: "Connected",
                                                     value: .boolean(true))
        #expect(h.wait { peripheral.centrals.count == 1 })
        let second = try self.acquire(h, 0x3EA1)
        defer { second.close() }
        #expect(h.errorName(h.writeStart()) == nil)
        #expect(h.wait { second.packets.count >= 3 })
        #expect(peripheral.device?.session?.number == 2)
        let sessions = h.truthRows("sessions.csv").map { $0[0] }
        #expect(sessions == ["1", "2"])
        #expect(h.truthRows("bvp.csv").contains { $0[5] == "2" })
        // A fresh decoder reconstructs session 2 from its first packet, as after a reconnect.
        var decoder = E4BVPDecoder()
        var decoded = E4BVPPacket()
        _ = try second.packets[0].withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws(E4DecodeError) in
            try decoder.decode(raw, into: &decoded)
        }
        let firstOfSession2 = try #require(h.truthRows("bvp.csv").first { $0[5] == "2" })
        #expect(Int64(firstOfSession2[2]) == decoded.green[0])
    }

    @Test func startNotifyDeliversPropertiesChangedValueAndStopNotifyEndsTheSession() throws {
        let h = try PeripheralHarness()
        defer { h.close() }
        let peripheral = try h.startRegistered()
        let connection = try #require(h.bluetoothd.connection)
        let owner = try #require(h.bluetoothd.applicationOwner)
        let path = try #require(h.characteristicPath(0x3EA1))
        var values: [[UInt8]] = []
        _ = try connection.subscribe(DBusMatchRule(sender: owner, interface: "org.freedesktop.DBus.Properties",
                                                   member: "PropertiesChanged", path: path)) { message in
            guard let arguments = try? message.arguments(), arguments.first == .string(Self.characteristicInterface),
                  let value = arguments.dropFirst().first?.stringKeyed?["Value"]?.bytes else { return }
            values.append(value)
        }
        #expect(h.errorName(h.call(path, Self.characteristicInterface, "StartNotify")) == nil)
        #expect(h.errorName(h.call(path, Self.characteristicInterface, "AcquireNotify", [h.options()]))
            == "org.bluez.Error.InProgress")
        #expect(h.errorName(h.writeStart()) == nil)
        #expect(h.wait { values.count >= 5 })
        var decoder = E4BVPDecoder()
        for packet in values {
            var decoded = E4BVPPacket()
            _ = try packet.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws(E4DecodeError) in
                try decoder.decode(raw, into: &decoded)
            }
        }
        #expect(decoder.statistics.lostPackets == 0)
        let truth = h.truthRows("bvp.csv")
        #expect(Int64(truth[values.count * 11 - 1][2]) == decoder.green)

        #expect(h.errorName(h.call(path, Self.characteristicInterface, "StopNotify")) == nil)
        #expect(peripheral.device?.session == nil)
        #expect(h.errorName(h.call(path, Self.characteristicInterface, "StopNotify")) == "org.bluez.Error.Failed")
    }

    // MARK: Misuse

    @Test func readsTheBatteryAndAnswersMisuseWithBlueZErrors() throws {
        let h = try PeripheralHarness()
        defer { h.close() }
        let peripheral = try h.startRegistered()
        let battery = try #require(h.characteristicPath(0x3EB3))
        let command = try #require(h.characteristicPath(0x3E71))
        let bvp = try #require(h.characteristicPath(0x3EA1))
        let read = h.call(battery, Self.characteristicInterface, "ReadValue", [h.options()])
        guard case .success(let values) = read, let bytes = values.first?.bytes else {
            Issue.record("ReadValue failed: \(read)")
            return
        }
        #expect(bytes.count == 1)
        let expected = try #require(peripheral.device).physiology.batteryPercent(at: peripheral.now)
        #expect(abs(Int(bytes[0]) - Int(expected)) <= 1)
        #expect((1...100).contains(bytes[0]))
        #expect(h.errorName(h.call(battery, Self.characteristicInterface, "ReadValue",
                                   [.properties([("offset", .uint16(2))])])) == "org.bluez.Error.InvalidOffset")
        #expect(h.errorName(h.call(bvp, Self.characteristicInterface, "ReadValue", [h.options()]))
            == "org.bluez.Error.NotPermitted")

        func write(_ path: String, _ bytes: [UInt8]) -> String? {
            h.errorName(h.call(path, Self.characteristicInterface, "WriteValue", [.bytes(bytes), h.options()]))
        }
        #expect(write(command, [0x02, 0, 0, 0, 0]) == "org.bluez.Error.Failed")
        #expect(write(command, [0x01, 0, 0]) == "org.bluez.Error.InvalidValueLength")
        #expect(write(command, []) == "org.bluez.Error.InvalidValueLength")
        #expect(write(bvp, [0x01, 0, 0, 0, 0]) == "org.bluez.Error.NotPermitted")
        #expect(peripheral.device?.session == nil)
        #expect(h.errorName(h.call(command, Self.characteristicInterface, "WriteValue",
                                   [.bytes([0x01, 0, 0, 0, 0]), .properties([("offset", .uint16(1))])]))
            == "org.bluez.Error.InvalidOffset")
        #expect(h.errorName(h.call(command, Self.characteristicInterface, "AcquireNotify", [h.options()]))
            == "org.bluez.Error.NotSupported")
        #expect(h.errorName(h.call(command, Self.characteristicInterface, "StartNotify"))
            == "org.bluez.Error.NotSupported")
        #expect(h.errorName(h.call(command, Self.characteristicInterface, "ReadValue", [h.options()]))
            == "org.bluez.Error.NotPermitted")
        let reader = try self.acquire(h, 0x3EA1)
        defer { reader.close() }
        #expect(h.errorName(h.call(bvp, Self.characteristicInterface, "AcquireNotify", [h.options()]))
            == "org.bluez.Error.NotPermitted")
        #expect(h.errorName(h.call(bvp, Self.characteristicInterface, "StartNotify"))
            == "org.bluez.Error.NotPermitted")
        #expect(h.failure == nil)
    }
}
