@testable import Agent
import EmpaLink
import Physio
import Foundation
import Spool
import Testing

/// Stands in for the agent: every stream enabled, flush per notification unless told otherwise.
final class TestHost: DevicePublisherHost {
    var enabledStreams = Set(StreamKind.allCases)
    var flushEveryNotification = true
    var publishesRawBVP = false
    var armed = 0
    func armFlush() { self.armed += 1 }
    func batteryChanged(_ device: EmpaticaDeviceManager) {}
    func deviceStatusChanged(_ device: EmpaticaDeviceManager) {}
}

/// Keeps what the publisher hands to the outbox.
final class RecordingSink: MessageSink {
    var messages: [(topic: String, payload: String)] = []
    func key(serial: String, stream: StreamKind) -> SpoolStreamKey? { nil }
    func publish(topic: UnsafePointer<CChar>, key: SpoolStreamKey?, payload: JSONBuffer) {
        guard !payload.overflowed else { return }
        self.messages.append((String(cString: topic), String(decoding: payload.bytes, as: UTF8.self)))
    }
}

/// Every stream's payload against SPEC §10, byte for byte, as the publisher formats it.
@Suite struct DevicePublisherTests {
    let host = TestHost()
    let sink = RecordingSink()
    let publisher: DevicePublisher

    init() {
        self.publisher = DevicePublisher(host: self.host, sink: self.sink, json: JSONBuffer(capacity: 64 << 10),
                                         topicBase: "empalink/ward-3", serial: "9ff167", label: "bed 4")
    }

    /// The payload with the session id replaced by `SID`, so it can be compared whole.
    func payloads(_ topicSuffix: String) -> [String] {
        let sidField = "\"sid\":\"\(self.publisher.sid)\""
        return self.sink.messages.filter { $0.topic == "empalink/ward-3/9ff167/" + topicSuffix }
            .map { $0.payload.replacingOccurrences(of: sidField, with: "\"sid\":\"SID\"") }
    }

    static func samples(_ values: [Float], _ body: (UnsafeBufferPointer<Float>) -> Void) {
        values.withUnsafeBufferPointer(body)
    }

    @Test func sessionIDIsSixteenHexDigitsAndNewPerSession() {
        let first = self.publisher.sid
        #expect(first.count == 16 && first.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        self.publisher.newSession()
        #expect(self.publisher.sid != first)
    }

    @Test func sampledStreams() {
        Self.samples([1.5, -2.25, .nan, 0.0004]) { self.publisher.samples(.bvp, $0, t0: 1795961731.5, fs: 64) }
        Self.samples([0.12345, 2]) { self.publisher.samples(.gsr, $0, t0: 1795961731.25, fs: 4) }
        Self.samples([36.125]) { self.publisher.samples(.temp, $0, t0: 1795961731, fs: 4) }
        Self.samples([-0.5]) { self.publisher.samples(.bvp, $0, t0: 1795961731.5625, fs: 64) }
        #expect(self.payloads("bvp") == [
            #"{"sid":"SID","seq":0,"t":1795961731.5,"fs":64,"v":[1.5,-2.25,null,0]}"#,
            #"{"sid":"SID","seq":1,"t":1795961731.5625,"fs":64,"v":[-0.5]}"#,
        ])
        #expect(self.payloads("gsr") == [#"{"sid":"SID","seq":0,"t":1795961731.25,"fs":4,"v":[0.1235,2]}"#])
        #expect(self.payloads("temp") == [#"{"sid":"SID","seq":0,"t":1795961731,"fs":4,"v":[36.13]}"#])
    }

    @Test func bvpIsTheFilteredSignalUnlessRawIsConfigured() {
        let raw: [Float] = [10, 20]
        let filtered: [Float] = [9.5, 19.25]
        let both = { (publisher: DevicePublisher, t0: Double) in
            raw.withUnsafeBufferPointer { r in
                filtered.withUnsafeBufferPointer { publisher.bvp(raw: r, filtered: $0, t0: t0, fs: 64) }
            }
        }
        both(self.publisher, 100)
        self.host.publishesRawBVP = true
        both(self.publisher, 100.5)
        #expect(self.payloads("bvp") == [
            #"{"sid":"SID","seq":0,"t":100,"fs":64,"v":[9.5,19.25]}"#,
            #"{"sid":"SID","seq":1,"t":100.5,"fs":64,"v":[10,20]}"#,
        ])
    }

    @Test func acceleration() {
        let x: [Int8] = [1, -64, 127]
        let y: [Int8] = [0, 2, -128]
        let z: [Int8] = [64, 63, 0]
        x.withUnsafeBufferPointer { x in
            y.withUnsafeBufferPointer { y in
                z.withUnsafeBufferPointer { z in
                    self.publisher.acceleration(x: x, y: y, z: z, t0: 1795961731.03125, fs: 32)
                }
            }
        }
        #expect(self.payloads("acc") == [
            #"{"sid":"SID","seq":0,"t":1795961731.03125,"fs":32,"v":[[1,0,64],[-64,2,63],[127,-128,0]]}"#,
        ])
    }

    @Test func eventStreams() {
        self.publisher.ibi(0.81254, at: 1795961731.123456)
        self.publisher.heartRate(72.25, at: 1795961732)
        self.publisher.battery(0.83, at: 1795961733.5)
        self.publisher.tag(at: 1795961734.25)
        self.publisher.ibi(.infinity, at: 1795961735)
        #expect(self.payloads("ibi") == [
            #"{"sid":"SID","seq":0,"v":[[1795961731.123456,0.8125]]}"#,
            #"{"sid":"SID","seq":1,"v":[[1795961735,null]]}"#,
        ])
        #expect(self.payloads("hr") == [#"{"sid":"SID","seq":0,"source":"beats","v":[[1795961732,72.3]],"confidence":[1]}"#])
        #expect(self.payloads("battery") == [#"{"sid":"SID","seq":0,"v":[[1795961733.5,0.83]]}"#])
        #expect(self.payloads("tag") == [#"{"sid":"SID","seq":0,"v":[1795961734.25]}"#])
    }

    @Test func everyPayloadIsValidJSONWithTheKeysOfItsStream() throws {
        self.host.flushEveryNotification = false
        Self.samples([1, 2, 3]) { self.publisher.samples(.bvp, $0, t0: 10, fs: 64) }
        Self.samples([1]) { self.publisher.samples(.gsr, $0, t0: 10, fs: 4) }
        Self.samples([1]) { self.publisher.samples(.temp, $0, t0: 10, fs: 4) }
        let axis: [Int8] = [1]
        axis.withUnsafeBufferPointer { a in self.publisher.acceleration(x: a, y: a, z: a, t0: 10, fs: 32) }
        self.publisher.ibi(0.8, at: 10)
        self.publisher.heartRate(70, at: 10)
        self.publisher.battery(0.5, at: 10)
        self.publisher.tag(at: 10)
        #expect(self.sink.messages.isEmpty, "batched until the flush")
        #expect(self.host.armed == 8)
        #expect(self.publisher.flushAll())
        #expect(!self.publisher.flushAll(), "nothing left to flush")
        let topics = self.sink.messages.map { $0.topic.split(separator: "/").last.map(String.init) ?? "" }
        #expect(topics == ["bvp", "gsr", "acc", "temp", "ibi", "hr", "battery", "tag"])
        for (topic, payload) in self.sink.messages {
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any], "\(payload)")
            let stream = try #require(topic.split(separator: "/").last.map(String.init))
            let sampled = ["bvp", "gsr", "acc", "temp"].contains(stream)
            let keys: Set<String> = sampled ? ["sid", "seq", "t", "fs", "v"]
                : stream == "hr" ? ["sid", "seq", "source", "v", "confidence"] : ["sid", "seq", "v"]
            #expect(Set(object.keys) == keys, "\(topic)")
            #expect(object["sid"] as? String == self.publisher.sid)
            #expect((object["seq"] as? NSNumber)?.intValue == 0)
            let values = try #require(object["v"] as? [Any])
            switch stream {
            case "acc", "ibi", "hr", "battery":
                #expect(values.allSatisfy { ($0 as? [NSNumber])?.count == (stream == "acc" ? 3 : 2) }, "\(payload)")
            default: #expect(values.allSatisfy { $0 is NSNumber }, "\(payload)")
            }
        }
    }

    /// Each `hr` message names one source; a value from another source starts the next message, so a batch never
    /// mixes beat-derived and spectral values, and `confidence` runs parallel to `v`.
    @Test func heartRateMessagesSplitBySourceWithConfidence() {
        self.host.flushEveryNotification = false
        self.publisher.heartRate(72, confidence: 1, source: .beats, at: 1795961732)
        self.publisher.heartRate(73, confidence: 1, source: .beats, at: 1795961733)
        self.publisher.heartRate(118.04, confidence: 0.6249, source: .spectral, at: 1795961734)
        self.publisher.heartRate(121, confidence: 1.7, source: .spectral, at: 1795961735)
        self.publisher.heartRate(80, confidence: 1, source: .device, at: 1795961736)
        self.publisher.flushAll()
        #expect(self.payloads("hr") == [
            #"{"sid":"SID","seq":0,"source":"beats","v":[[1795961732,72],[1795961733,73]],"confidence":[1,1]}"#,
            #"{"sid":"SID","seq":1,"source":"spectral","v":[[1795961734,118],[1795961735,121]],"confidence":[0.62,1]}"#,
            #"{"sid":"SID","seq":2,"source":"device","v":[[1795961736,80]],"confidence":[1]}"#,
        ])
    }

    @Test func disabledStreamsAreNotPublished() {
        self.host.enabledStreams = [.hr]
        Self.samples([1]) { self.publisher.samples(.bvp, $0, t0: 10, fs: 64) }
        self.publisher.heartRate(70, at: 10)
        #expect(self.sink.messages.map(\.topic) == ["empalink/ward-3/9ff167/hr"])
    }

    @Test func aGapInTheSamplesStartsANewMessage() {
        self.host.flushEveryNotification = false
        Self.samples([1, 2]) { self.publisher.samples(.gsr, $0, t0: 10, fs: 4) }
        // 10.5 continues (two samples at 4 Hz); 11.5 leaves a gap of two samples.
        Self.samples([3]) { self.publisher.samples(.gsr, $0, t0: 10.5, fs: 4) }
        Self.samples([4]) { self.publisher.samples(.gsr, $0, t0: 11.5, fs: 4) }
        self.publisher.flushAll()
        #expect(self.payloads("gsr") == [
            #"{"sid":"SID","seq":0,"t":10,"fs":4,"v":[1,2,3]}"#,
            #"{"sid":"SID","seq":1,"t":11.5,"fs":4,"v":[4]}"#,
        ])
    }
}
