import Bluetooth
import E4
import Testing

@testable import EmpaLink

/// The E4 described through the profile seam (SPEC §6, §15): what it needs, what is optional, how its session
/// starts, and that every stream's channel reaches its decoder.
@Suite struct E4DeviceProfileTests {
    let profile = E4DeviceProfile()

    @Test func requiresTheCommandAndBVPAndTreatsTheOtherStreamsAsOptional() {
        let table = self.profile.characteristics
        #expect(table.map(\.uuid) == [E4Profile.commandCharacteristic] + E4Stream.allCases.map(\.characteristic))
        #expect(table.filter(\.isRequired).map(\.uuid)
                    == [E4Profile.commandCharacteristic, E4Profile.bvpCharacteristic])
        #expect(table.filter(\.notifies).count == E4Stream.allCases.count)
        #expect(table.filter(\.readAtStart).map(\.uuid) == [E4Profile.batteryCharacteristic])
        #expect(!table[E4DeviceProfile.commandChannel].notifies)
    }

    @Test func everyNotifyingChannelNamesItsStream() {
        for (channel, characteristic) in self.profile.characteristics.enumerated() {
            let stream = E4DeviceProfile.stream(channel: channel)
            #expect(stream?.characteristic == (characteristic.notifies ? characteristic.uuid : nil))
        }
        #expect(E4DeviceProfile.stream(channel: -1) == nil)
        #expect(E4DeviceProfile.stream(channel: self.profile.characteristics.count) == nil)
    }

    @Test func sessionStartsWithTheStartCommandAndTheUnixTime() {
        let writes = self.profile.sessionStart(unixTime: 1_700_000_000.75)
        #expect(writes == [ProfileWrite(channel: E4DeviceProfile.commandChannel,
                                        bytes: [0x01, 0x00, 0xF1, 0x53, 0x65], withResponse: true)])
        let decoded = writes.first.map { write in write.bytes.withUnsafeBytes { try? E4Command.decode($0) } }
        #expect(decoded == .start(unixTime: 1_700_000_000))
    }

    @Test func recognisesTheE4FamilyByName() {
        #expect(self.profile.recognizes(name: "Empatica E4", serviceUUIDs: []))
        #expect(self.profile.recognizes(name: "Empatica E3", serviceUUIDs: []))
        #expect(!self.profile.recognizes(name: "Polar H10 1234", serviceUUIDs: [.bit16(0x180D)]))
        #expect(!self.profile.recognizes(name: nil, serviceUUIDs: [E4Profile.sensorService]))
        #expect(self.profile.advertisementPatterns == [
            AdvertisementPattern(adType: 0x09, bytes: Array("Empatica E4".utf8)),
            AdvertisementPattern(adType: 0x09, bytes: Array("Empatica E3".utf8)),
        ])
    }

    /// A malformed packet through the seam is counted, as it is by the E4 decoders themselves.
    @Test func decoderCountsThroughTheSeam() {
        let decoder = self.profile.makeDecoder()
        var sink = NullSink()
        let bad: [UInt8] = [1, 2, 3]
        bad.withUnsafeBytes { decoder.receive(channel: 1, $0, arrival: 1_700_000_000, into: &sink) }
        bad.withUnsafeBytes { decoder.receive(channel: E4DeviceProfile.commandChannel, $0, arrival: 0, into: &sink) }
        #expect(decoder.statistics.decodeErrors == 1)
        #expect(decoder.statistics.packets == 0)
    }
}

/// A sink that drops everything.
struct NullSink: DecodedStreamSink {
    func samples(_ stream: SampledStream, _ values: UnsafeBufferPointer<Float>, t0: Double, fs: Double) {}
    func acceleration(x: UnsafeBufferPointer<Int8>, y: UnsafeBufferPointer<Int8>, z: UnsafeBufferPointer<Int8>,
                      t0: Double, fs: Double) {}
    func ibi(_ seconds: Float, at time: Double) {}
    func heartRate(_ bpm: Float, at time: Double) {}
    func battery(_ level: Float, at time: Double) {}
    func tag(at time: Double) {}
}
