import Consumer
import Testing

@Suite struct PayloadReaderTests {
    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func readsASampledMessageAsTheAgentPublishesIt() throws {
        let json = try PayloadJSON.parse(self.bytes(
            #"{"sid":"5f3c9a1e7b2d4c08","seq":412,"t":1764426103.015625,"fs":64,"v":[12.5,-4.5]}"#))
        let message = try DataMessage.decode(json, stream: .bvp)
        #expect(message.sid == "5f3c9a1e7b2d4c08")
        #expect(message.seq == 412)
        #expect(message.samples == [12.5, -4.5])
        #expect(message.time(of: 1) == 1764426103.015625 + 1.0 / 64)
    }

    @Test func readsAccAndEventStreams() throws {
        let acc = try DataMessage.decode(try PayloadJSON.parse(self.bytes(
            #"{"sid":"abcdefgh","seq":0,"t":1764426103.0,"fs":32,"v":[[-3,12,62],[1,2,3]]}"#)), stream: .acc)
        #expect(acc.samples == [-3, 12, 62, 1, 2, 3])
        #expect(acc.count == 2)
        let ibi = try DataMessage.decode(try PayloadJSON.parse(self.bytes(
            #"{"sid":"abcdefgh","seq":87,"v":[[1764426102.734375,0.828125]]}"#)), stream: .ibi)
        #expect(ibi.events == [DataMessage.Event(time: 1764426102.734375, value: 0.828125)])
        let tag = try DataMessage.decode(try PayloadJSON.parse(self.bytes(
            #"{"sid":"abcdefgh","seq":0,"v":[1764426101.9375]}"#)), stream: .tag)
        #expect(tag.events.map(\.time) == [1764426101.9375])
    }

    /// `hr` names its source and gives each value a confidence; a message of an older agent (`[[t,bpm],…]` only)
    /// reads as beat-derived with full confidence.
    @Test func readsHeartRateSourceAndConfidence() throws {
        let spectral = try DataMessage.decode(try PayloadJSON.parse(self.bytes(
            #"{"sid":"abcdefgh","seq":3,"source":"spectral","v":[[1764426103.0,118.2],[1764426104.0,119]],"confidence":[0.62,0.7]}"#)),
            stream: .hr)
        #expect(spectral.source == "spectral")
        #expect(spectral.events == [DataMessage.Event(time: 1764426103, value: 118.2, confidence: 0.62),
                                    DataMessage.Event(time: 1764426104, value: 119, confidence: 0.7)])
        let old = try DataMessage.decode(try PayloadJSON.parse(self.bytes(
            #"{"sid":"abcdefgh","seq":0,"v":[[1764426103.0,72.4]]}"#)), stream: .hr)
        #expect(old.source == "beats")
        #expect(old.events == [DataMessage.Event(time: 1764426103, value: 72.4, confidence: 1)])
    }

    @Test(arguments: [
        #"{"sid":"abcdefgh","seq":0,"source":"beats","v":[[1764426103.0,72.4]],"confidence":[]}"#,
        #"{"sid":"abcdefgh","seq":0,"source":"beats","v":[[1764426103.0,72.4]],"confidence":[1.5]}"#,
        #"{"sid":"abcdefgh","seq":0,"source":"beats","v":[[1764426103.0,72.4]],"confidence":["1"]}"#,
        #"{"sid":"abcdefgh","seq":0,"source":"","v":[[1764426103.0,72.4]]}"#,
        #"{"sid":"abcdefgh","seq":0,"source":7,"v":[[1764426103.0,72.4]]}"#,
    ])
    func rejectsHeartRateThatDoesNotFit(_ text: String) throws {
        let json = try PayloadJSON.parse(self.bytes(text))
        #expect(throws: PayloadError.self) { try DataMessage.decode(json, stream: .hr) }
    }

    @Test(arguments: [
        #"{"sid":"abcdefgh","seq":1,"t":1764426103.0,"fs":32,"v":[12.5]}"#,           // bvp at the wrong rate
        #"{"sid":"abcdefgh","seq":-1,"t":1764426103.0,"fs":64,"v":[1]}"#,             // negative seq
        #"{"sid":"abcdefgh","seq":1.5,"t":1764426103.0,"fs":64,"v":[1]}"#,            // fractional seq
        #"{"sid":"abcdefgh","seq":1,"t":1764426103.0,"fs":64,"v":[]}"#,               // empty v
        #"{"sid":"abcdefgh","seq":1,"t":5,"fs":64,"v":[1]}"#,                         // 1970 time
        #"{"sid":"abcdefgh","seq":1,"t":1764426103.0,"fs":64,"v":["1"]}"#,            // string sample
        #"{"sid":"a b","seq":1,"t":1764426103.0,"fs":64,"v":[1]}"#,                   // bad sid
        #"{"seq":1,"t":1764426103.0,"fs":64,"v":[1]}"#,                               // no sid
    ])
    func rejectsBVPThatDoesNotFit(_ text: String) throws {
        let json = try PayloadJSON.parse(self.bytes(text))
        #expect(throws: PayloadError.self) { try DataMessage.decode(json, stream: .bvp) }
    }

    /// Found by the `payload` fuzz target's design (issue #21; Fuzz/corpus/payload/crash-devices-rssi-1e300): a
    /// devices payload whose `rssi` no `Int` holds trapped every consumer (`Int(1e300)`). It is left out instead, as
    /// a device status's out-of-range `rssi` already was.
    @Test(arguments: ["1e300", "-1e300", "9223372036854775808", "21", "-201"])
    func devicesRSSIOutsideItsRangeIsLeftOutNotTrappedOn(_ rssi: String) throws {
        let devices = try SeenDevice.decodeAll(try PayloadJSON.parse(self.bytes(
            #"{"a1b2c3":{"allowed":true,"rssi":"# + rssi + "}}")))
        #expect(devices["a1b2c3"] == SeenDevice(rssi: nil, allowed: true))
        let status = try DeviceState.decode(try PayloadJSON.parse(self.bytes(
            #"{"status":"connected","rssi":"# + rssi + "}")))
        #expect(status.rssi == nil)
        let inRange = try SeenDevice.decodeAll(try PayloadJSON.parse(self.bytes(
            #"{"a1b2c3":{"allowed":false,"rssi":-58}}"#)))
        #expect(inRange["a1b2c3"]?.rssi == -58)
    }

    @Test func rejectsAccOutsideSignedBytes() throws {
        let json = try PayloadJSON.parse(self.bytes(#"{"sid":"abcdefgh","seq":0,"t":1764426103.0,"fs":32,"v":[[200,0,0]]}"#))
        #expect(throws: PayloadError.self) { try DataMessage.decode(json, stream: .acc) }
    }

    @Test(arguments: ["", "{", "[1,]", "{\"a\":}", "nul", "1 2", "{\"a\":1}x", "\"\u{01}\"", "+1", ".5", "NaN",
                      "[[[[[[[[[[[1]]]]]]]]]]]", "\"\\q\"", "{\"a\" 1}", "\"abc"])
    func rejectsMalformedJSON(_ text: String) {
        #expect(throws: PayloadError.self) { try PayloadJSON.parse(self.bytes(text)) }
    }

    @Test func rejectsPayloadsOverTheLimit() {
        let big = [UInt8](repeating: UInt8(ascii: " "), count: PayloadJSON.maximumBytes + 1)
        #expect(throws: PayloadError.self) { try PayloadJSON.parse(big) }
    }

    @Test func readsEscapesAndNesting() throws {
        let json = try PayloadJSON.parse(self.bytes(#" {"a":"x\"\u0062\n","b":[true,false,null,-1.5e2]} "#))
        #expect(json["a"]?.string == "x\"b\n")
        #expect(json["b"] == .array([.bool(true), .bool(false), .null, .number(-150)]))
    }

    @Test func everyPrefixOfAValidPayloadIsRejectedNeverTrapped() {
        let text = self.bytes(#"{"sid":"abcdefgh","seq":3,"t":1764426103.0,"fs":32,"v":[[1,2,3]]}"#)
        for end in 0..<text.count {
            #expect(throws: PayloadError.self) { try PayloadJSON.parse(Array(text[0..<end])) }
        }
    }

    @Test func topicsUnderThePrefix() {
        #expect(ConsumerTopic.parse("lab/ward/a/b9/bvp", prefix: "lab/ward") == .stream(board: "a", device: "b9",
                                                                                       stream: .bvp))
        #expect(ConsumerTopic.parse("empalink/pi/status", prefix: "empalink") == .agentStatus(board: "pi"))
        #expect(ConsumerTopic.parse("empalink/pi/a00101/status", prefix: "empalink")
                    == .deviceStatus(board: "pi", device: "a00101"))
        #expect(ConsumerTopic.parse("empalink/pi/cmd/result", prefix: "empalink") == nil)
        #expect(ConsumerTopic.parse("empalink/fleet/lease/a00101", prefix: "empalink") == nil)
        #expect(ConsumerTopic.parse("empalink/pi/a00101/xyz", prefix: "empalink") == nil)
        #expect(ConsumerTopic.parse("other/pi/a00101/bvp", prefix: "empalink") == nil)
    }
}
