import Bluetooth
import E4
import Testing

@testable import EmpaLink

/// The device manager connects and decodes as the device's profile says, not as an E4 is known to be (SPEC §15):
/// a profile of the simulator's wristband that wants only its accelerometer gets only that, and one that wants a
/// characteristic the device lacks fails naming it.
@Suite(.serialized) struct DeviceProfileSeamTests {
    typealias Rig = EmpaLinkSimulatorTests.Rig

    /// What the test profile's decoder was handed, by channel.
    final class ChannelLog: @unchecked Sendable {
        var values: [Int: Int] = [:]
        var characteristics: Set<BluetoothUUID> = []
    }

    final class LoggingDecoder: ProfileDecoder {
        let log: ChannelLog
        var count: UInt64 = 0

        init(log: ChannelLog) {
            self.log = log
        }

        func receive<Sink: DecodedStreamSink>(channel: Int, _ bytes: UnsafeRawBufferPointer, arrival: Double,
                                              into sink: inout Sink) {
            self.log.values[channel, default: 0] += 1
            self.count += 1
        }

        func reset() {}
        var statistics: DecoderStatistics { DecoderStatistics(packets: self.count) }
        var reanchors: UInt64 { 0 }
    }

    /// The simulated wristband seen through a profile of the test's own: the command, one stream, and whatever else
    /// the test adds.
    struct TestProfile: DeviceProfile {
        let log: ChannelLog
        let extra: [ProfileCharacteristic]

        var name: String { "test" }
        var displayName: String { "Test device" }
        func recognizes(name: String?, serviceUUIDs: [BluetoothUUID]) -> Bool { name == "Empatica E4" }
        var advertisementPatterns: [AdvertisementPattern] { [] }
        var characteristics: [ProfileCharacteristic] {
            [ProfileCharacteristic(uuid: .bit16(0x3E71), label: "command", notifies: false, isRequired: true),
             ProfileCharacteristic(uuid: .bit16(0x3EA3), label: "ACC", notifies: true, isRequired: true)] + self.extra
        }

        func sessionStart(unixTime: Double) -> [ProfileWrite] {
            var packet = E4PacketBytes()
            E4Command.start(unixTime: UInt32(clamping: Int(unixTime))).encode(into: &packet)
            return [ProfileWrite(channel: 0, bytes: packet.withUnsafeBytes { Array($0) })]
        }

        func makeDecoder() -> any ProfileDecoder { LoggingDecoder(log: self.log) }
    }

    static func rig(_ profile: TestProfile) throws -> Rig {
        var options = EmpaticaAPI.Options()
        options.profiles = [profile]
        options.connectTimeout = .seconds(3)
        return try Rig(devices: 1, allow: nil, options: options)
    }

    @Test func subscribesToAndDecodesOnlyWhatTheProfileAsksFor() throws {
        let log = ChannelLog()
        let optionalAbsent = ProfileCharacteristic(uuid: .bit16(0xFFF1), label: "absent", notifies: true,
                                                   isRequired: false)
        let rig = try Self.rig(TestProfile(log: log, extra: [optionalAbsent]))
        defer { rig.close() }
        try rig.api.authenticate(apiKey: EmpaLinkSimulatorTests.apiKey)
        try rig.api.discoverDevices(delegate: rig.recorder)
        #expect(try rig.run(until: { !rig.recorder.devices.isEmpty }))
        let device = try #require(rig.recorder.devices.first)
        #expect(device.profile.name == "test")
        device.rawTap = { uuid, _, _ in log.characteristics.insert(uuid) }
        try device.connect(delegate: rig.recorder)
        #expect(try rig.run(until: { device.deviceStatus == .connected }), "an absent optional one is waited out")
        #expect(try rig.run(until: { (log.values[1] ?? 0) >= 5 }))
        #expect(Set(log.values.keys) == [1], "only the ACC channel carries values: \(log.values)")
        #expect(log.characteristics == [.bit16(0x3EA3)])
        #expect(device.counters.acquiredNotifications == 1)
        #expect(device.statistics.packets == UInt64(log.values[1] ?? 0))
        #expect(rig.recorder.bvp.isEmpty && rig.recorder.acc.isEmpty, "the E4 decoders are not involved")
    }

    @Test func aMissingRequiredCharacteristicFailsNamingIt() throws {
        let log = ChannelLog()
        let required = ProfileCharacteristic(uuid: .bit16(0x2A37), label: "heart rate measurement", notifies: true,
                                             isRequired: true)
        let rig = try Self.rig(TestProfile(log: log, extra: [required]))
        defer { rig.close() }
        try rig.api.authenticate(apiKey: EmpaLinkSimulatorTests.apiKey)
        try rig.api.discoverDevices(delegate: rig.recorder)
        #expect(try rig.run(until: { !rig.recorder.devices.isEmpty }))
        let device = try #require(rig.recorder.devices.first)
        try device.connect(delegate: rig.recorder, options: .init(autoReconnect: false))
        #expect(try rig.run(until: { device.lastError != nil }, limit: .seconds(15)))
        #expect(device.lastError == .profileMismatch("no heart rate measurement characteristic 2A37"))
        #expect(device.deviceStatus != .connected)
        #expect(log.values.isEmpty)
    }
}

extension DeviceProfileSeamTests {
    /// A characteristic the profile would subscribe to but the device does not let notify (its flags say so) is
    /// not subscribed: the session goes on without, as a strap whose Battery Level only reads (SPEC §16) must.
    @Test func aCharacteristicWithoutNotifyIsNotSubscribed() throws {
        let log = ChannelLog()
        // 3EB3 (battery) offers notify and read; 3E71 (command) only write: asked to notify, it must be left alone.
        let writeOnly = ProfileCharacteristic(uuid: .bit16(0x3E71), label: "command again", notifies: true,
                                              isRequired: false)
        let rig = try Self.rig(TestProfile(log: log, extra: [writeOnly]))
        defer { rig.close() }
        try rig.api.authenticate(apiKey: EmpaLinkSimulatorTests.apiKey)
        try rig.api.discoverDevices(delegate: rig.recorder)
        #expect(try rig.run(until: { !rig.recorder.devices.isEmpty }))
        let device = try #require(rig.recorder.devices.first)
        try device.connect(delegate: rig.recorder, options: .init(autoReconnect: false))
        #expect(try rig.run(until: { device.deviceStatus == .connected || device.lastError != nil }))
        #expect(device.deviceStatus == .connected, "\(String(describing: device.lastError))")
        #expect(device.lastError == nil)
        #expect(device.counters.acquiredNotifications == 1)
        #expect(device.counters.startNotifyFallbacks == 0)
    }
}
