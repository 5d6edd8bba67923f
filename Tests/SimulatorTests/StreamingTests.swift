#if canImport(Glibc)
import Glibc
#endif
import DBus
import E4
import Testing

@testable import Simulator

/// Streaming after the start command: AcquireNotify fds and StartNotify `PropertiesChanged(Value)`, decoded with
/// the E4 decoders and compared with the truth files.
@Suite(.serialized) struct StreamingTests {
    @Test func acquiredFdsCarryPacketsAtTheirRatesThatDecodeToTheTruth() throws {
        let h = try SimulatorHarness(devices: 1)
        defer { h.close() }
        try h.discoverAndConnect()
        var readers: [UInt16: NotifyReader] = [:]
        for uuid in [UInt16(0x3EA1), 0x3EA3, 0x3EA8, 0x3EA6] {
            let result = h.call(h.charPath(uuid), "org.bluez.GattCharacteristic1", "AcquireNotify", [.properties([])])
            guard case .success(let values) = result, values.count == 2, case .unixFD(let fd) = values[0] else {
                Issue.record("AcquireNotify \(uuid) failed: \(result)")
                return
            }
            // The negotiated ATT MTU (517 between BlueZ ends, the scenario default).
            #expect(values[1] == .uint16(517))
            var type: CInt = 0
            var length = socklen_t(MemoryLayout<CInt>.size)
            getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length)
            #expect(type == CInt(SOCK_SEQPACKET.rawValue))
            readers[uuid] = try NotifyReader(fd: fd, loop: h.loop)
        }
        defer { for reader in readers.values { reader.close() } }
        #expect(h.property(h.charPath(0x3EA1), "org.bluez.GattCharacteristic1", "NotifyAcquired") == .boolean(true))
        #expect(h.errorName(h.writeStart()) == nil)
        h.run(for: 3.2)
        let session = try #require(h.simulator.devices[0].session)
        let elapsed = h.simulator.now - session.start
        // Packets leave when their last sample is due: the count follows the sample clock to within a packet
        // (plus one for a tick in flight).
        func expected(_ rate: Double, _ perPacket: Double) -> Int { Int((elapsed * rate / perPacket).rounded(.down)) }
        let bvp = try #require(readers[0x3EA1]).packets
        let acc = try #require(readers[0x3EA3]).packets
        #expect(abs(bvp.count - expected(64, 11)) <= 1, "BVP packets \(bvp.count) in \(elapsed) s")
        #expect(abs(acc.count - expected(32, 6)) <= 1, "ACC packets \(acc.count) in \(elapsed) s")
        #expect(abs(try #require(readers[0x3EA8]).packets.count - expected(4, 6)) <= 1)
        #expect(abs(try #require(readers[0x3EA6]).packets.count - expected(4, 8)) <= 1)
        #expect(bvp.allSatisfy { $0.count == 20 })

        // Decode BVP and ACC with the E4 decoders; compare with the truth, sample by sample.
        var decoder = E4BVPDecoder()
        var greens: [Int64] = []
        var values: [Float] = []
        for packet in bvp {
            var decoded = E4BVPPacket()
            let continuity = try packet.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws(E4DecodeError) in
                try decoder.decode(raw, into: &decoded)
            }
            _ = continuity
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
        }
        // The PPG moves: a pulse is more than noise.
        #expect((values.max() ?? 0) - (values.min() ?? 0) > 20)

        var accDecoder = E4ACCDecoder()
        var xs: [Int8] = []
        for packet in acc {
            var decoded = E4ACCPacket()
            _ = try packet.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws(E4DecodeError) in
                try accDecoder.decode(raw, into: &decoded)
            }
            for i in 0..<6 { xs.append(decoded.x[i]) }
        }
        let accTruth = h.truthRows("acc.csv")
        #expect(accTruth.prefix(xs.count).map { Int8($0[1]) } == xs)
        // Intended times advance at exactly 1/fs.
        let times = truth.prefix(12).compactMap { Double($0[0]) }
        #expect(abs((times[11] - times[0]) - 11.0 / 64) < 1e-5)
        #expect(h.truthRows("sessions.csv").count == 1)
        #expect(h.truthRows("battery.csv").count >= 1)
    }

    @Test func startNotifyDeliversPropertiesChangedValue() throws {
        let h = try SimulatorHarness(devices: 1)
        defer { h.close() }
        try h.discoverAndConnect()
        let path = h.charPath(0x3EA1)
        #expect(h.errorName(h.call(path, "org.bluez.GattCharacteristic1", "StartNotify")) == nil)
        #expect(h.property(path, "org.bluez.GattCharacteristic1", "Notifying") == .boolean(true))
        #expect(h.errorName(h.call(path, "org.bluez.GattCharacteristic1", "StartNotify"))
            == "org.bluez.Error.InProgress")
        #expect(h.errorName(h.call(path, "org.bluez.GattCharacteristic1", "AcquireNotify", [.properties([])]))
            == "org.bluez.Error.InProgress")
        #expect(h.errorName(h.writeStart()) == nil)
        func values() -> [[UInt8]] {
            h.signals.compactMap { signal in
                guard signal.member == "PropertiesChanged", signal.path == path,
                      signal.arguments.first == .string("org.bluez.GattCharacteristic1"),
                      let changed = signal.arguments.dropFirst().first?.stringKeyed else { return nil }
                return changed["Value"]?.bytes
            }
        }
        #expect(h.wait { values().count >= 8 })
        var decoder = E4BVPDecoder()
        for packet in values() {
            var decoded = E4BVPPacket()
            _ = try packet.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws(E4DecodeError) in
                try decoder.decode(raw, into: &decoded)
            }
        }
        #expect(decoder.statistics.lostPackets == 0)
        let truth = h.truthRows("bvp.csv")
        let last = values().count * 11 - 1
        #expect(Int64(truth[last][2]) == decoder.green)
        #expect(h.errorName(h.call(path, "org.bluez.GattCharacteristic1", "StopNotify")) == nil)
        #expect(h.property(path, "org.bluez.GattCharacteristic1", "Notifying") == .boolean(false))
        #expect(h.errorName(h.call(path, "org.bluez.GattCharacteristic1", "StopNotify")) == "org.bluez.Error.Failed")
    }

    @Test func closingTheFdReleasesTheNotification() throws {
        let h = try SimulatorHarness(devices: 1)
        defer { h.close() }
        try h.discoverAndConnect()
        let path = h.charPath(0x3EA3)
        guard case .success(let values) = h.call(path, "org.bluez.GattCharacteristic1", "AcquireNotify",
                                                 [.properties([])]),
              case .unixFD(let fd)? = values.first else {
            Issue.record("AcquireNotify failed")
            return
        }
        close(fd)
        #expect(h.wait { h.simulator.devices[0].characteristic(0x3EA3)?.notifyFD == nil })
        #expect(h.property(path, "org.bluez.GattCharacteristic1", "NotifyAcquired") == .boolean(false))
        // Acquirable again.
        guard case .success(let again) = h.call(path, "org.bluez.GattCharacteristic1", "AcquireNotify",
                                                [.properties([])]), case .unixFD(let fd2)? = again.first else {
            Issue.record("second AcquireNotify failed")
            return
        }
        close(fd2)
    }

    @Test func theAcquiringClientLeavingReleasesTheFd() throws {
        let h = try SimulatorHarness(devices: 1)
        defer { h.close() }
        try h.discoverAndConnect()
        let other = try DBusConnection.connect(address: h.bus.address, loop: h.loop)
        let path = h.charPath(0x3EA1)
        guard case .success(let values) = h.call(path, "org.bluez.GattCharacteristic1", "AcquireNotify",
                                                 [.properties([])], on: other),
              case .unixFD(let fd)? = values.first else {
            Issue.record("AcquireNotify failed")
            return
        }
        let reader = try NotifyReader(fd: fd, loop: h.loop)
        defer { reader.close() }
        other.close()
        #expect(h.wait { reader.hungUp })
        #expect(h.property(path, "org.bluez.GattCharacteristic1", "NotifyAcquired") == .boolean(false))
    }
}
