import Bluetooth
import Testing

@testable import EmpaLink

/// The heart-rate profile's decoder (SPEC §16): device HR, RR intervals as IBIs stamped back from arrival, contact
/// changes, battery, and lost notifications counted as lost beats — never invented ones.
@Suite struct HRSProfileDecoderTests {
    final class Recorder: DecodedStreamSink {
        var ibis: [(Float, Double)] = []
        var rates: [(Float, Double)] = []
        var contacts: [(Bool, Double)] = []
        var batteries: [Float] = []

        func samples(_ stream: SampledStream, _ values: UnsafeBufferPointer<Float>, t0: Double, fs: Double) {}
        func acceleration(x: UnsafeBufferPointer<Int8>, y: UnsafeBufferPointer<Int8>, z: UnsafeBufferPointer<Int8>,
                          t0: Double, fs: Double) {}
        func ibi(_ seconds: Float, at time: Double) { self.ibis.append((seconds, time)) }
        func heartRate(_ bpm: Float, at time: Double) { self.rates.append((bpm, time)) }
        func battery(_ level: Float, at time: Double) { self.batteries.append(level) }
        func tag(at time: Double) {}
        func contact(_ detected: Bool, at time: Double) { self.contacts.append((detected, time)) }
    }

    static func feed(_ decoder: HRSProfileDecoder, _ channel: HRSDeviceProfile.Channel, _ bytes: [UInt8],
                     at arrival: Double, _ sink: Recorder) {
        var sink = sink
        bytes.withUnsafeBytes { decoder.receive(channel: channel.rawValue, $0, arrival: arrival, into: &sink) }
    }

    /// A strap at 1 Hz: flags 0x16 (contact detected, RR), HR, RR values in 1/1024 s.
    static func measurement(_ rate: UInt8, _ rr: [UInt16], contact: Bool = true) -> [UInt8] {
        [contact ? 0x16 : 0x14, rate] + rr.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
    }

    @Test func publishesRRAsIBIsEndingAtArrival() {
        let decoder = HRSProfileDecoder()
        let sink = Recorder()
        Self.feed(decoder, .measurement, Self.measurement(75, [800, 820]), at: 1000, sink)
        #expect(sink.rates.map(\.0) == [75])
        #expect(sink.ibis.map(\.0) == [Float(800) / 1024, Float(820) / 1024])
        // The newest beat at arrival, the one before it one RR earlier.
        #expect(abs(sink.ibis[1].1 - 1000) < 1e-9)
        #expect(abs(sink.ibis[0].1 - (1000 - 820.0 / 1024)) < 1e-9)
        #expect(sink.contacts.map(\.0) == [true])
        #expect(decoder.statistics.lostPackets == 0 && decoder.statistics.packets == 1)
    }

    /// Beats every 0.8 s, notified each second with the beats since the last; one notification in the middle of a
    /// run is dropped: the time it covered is counted as lost beats, and no IBI spans it.
    @Test func countsADroppedNotificationAsLostBeats() {
        let decoder = HRSProfileDecoder()
        let sink = Recorder()
        var beats: [Double] = []
        var t = 0.3
        while t < 60 { beats.append(t); t += 0.8 }
        var sent = 0
        var expectedIBIs: [Float] = []
        for second in 1...59 {
            let now = Double(second)
            let due = beats.enumerated().filter { $0.offset > 0 && $0.element <= now && $0.element > now - 1 }
            let rr = due.map { UInt16(((beats[$0.offset] - beats[$0.offset - 1]) * 1024).rounded()) }
            if second == 30 || second == 31 { continue }  // two notifications lost over the air
            Self.feed(decoder, .measurement, Self.measurement(75, rr), at: 1000 + now + 0.02, sink)
            expectedIBIs += rr.map { Float($0) / 1024 }
            sent += 1
        }
        #expect(sink.ibis.map(\.0) == expectedIBIs)
        // Two seconds lost at 0.8 s a beat: 2 or 3 beats; never 0, never invented in the stream.
        #expect((2...3).contains(decoder.statistics.lostPackets))
        #expect(decoder.statistics.packets == UInt64(sent))
    }

    @Test func doesNotCountTimeWithoutContactAsLostBeats() {
        let decoder = HRSProfileDecoder()
        let sink = Recorder()
        Self.feed(decoder, .measurement, Self.measurement(70, [860]), at: 100, sink)
        for second in 1...10 {
            Self.feed(decoder, .measurement, Self.measurement(0, [], contact: false), at: 100 + Double(second), sink)
        }
        Self.feed(decoder, .measurement, Self.measurement(70, [870]), at: 111, sink)
        #expect(decoder.statistics.lostPackets == 0)
        #expect(sink.contacts.map(\.0) == [true, false, true])
        #expect(sink.contacts.map(\.1) == [100, 101, 111])
    }

    @Test func countsWrongLengthsAndKeepsGoing() {
        let decoder = HRSProfileDecoder()
        let sink = Recorder()
        Self.feed(decoder, .measurement, [], at: 1, sink)
        Self.feed(decoder, .measurement, [0x11, 0x40], at: 2, sink)  // 16-bit rate, one byte of it
        Self.feed(decoder, .measurement, [0x10, 0x40, 0x00], at: 3, sink)  // half an RR
        Self.feed(decoder, .battery, [101], at: 4, sink)
        Self.feed(decoder, .measurement, Self.measurement(64, [1024]), at: 5, sink)
        #expect(decoder.statistics.decodeErrors == 4)
        #expect(sink.ibis.map(\.0) == [1.0])
    }

    @Test func readsBatteryAndTheDeviceInformation() {
        let decoder = HRSProfileDecoder()
        let sink = Recorder()
        Self.feed(decoder, .battery, [83], at: 1, sink)
        Self.feed(decoder, .location, [1], at: 1, sink)
        Self.feed(decoder, .manufacturer, Array("Polar Electro Oy".utf8), at: 1, sink)
        Self.feed(decoder, .model, Array("H10".utf8) + [0, 0], at: 1, sink)
        Self.feed(decoder, .serial, Array("C7A1B2".utf8), at: 1, sink)
        Self.feed(decoder, .firmware, Array("5.0.0".utf8), at: 1, sink)
        #expect(sink.batteries == [0.83])
        #expect(decoder.deviceInformation == DeviceInformation(manufacturer: "Polar Electro Oy", model: "H10",
                                                               serialNumber: "C7A1B2", firmware: "5.0.0",
                                                               bodySensorLocation: "chest"))
    }

    @Test func recognisesTheHeartRateServiceAndNeedsNoKeyGrant() {
        let profile = HRSDeviceProfile()
        #expect(profile.recognizes(name: "Polar H10 C7A1B2", serviceUUIDs: [.bit16(0x180D), .bit16(0x180F)]))
        #expect(!profile.recognizes(name: "Empatica E4", serviceUUIDs: []))
        #expect(!profile.requiresKeyGrant)
        #expect(E4DeviceProfile().requiresKeyGrant)
        #expect(profile.characteristics.filter(\.isRequired).map(\.uuid) == [.bit16(0x2A37)])
        #expect(profile.sessionStart(unixTime: 0).isEmpty)
    }
}
