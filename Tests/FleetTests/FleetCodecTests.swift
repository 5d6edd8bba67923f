import Testing

@testable import Fleet

/// The retained payloads and topics of SPEC §18: golden vectors, and hostile input that must be a typed error.
@Suite struct FleetCodecTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func presenceHasItsGoldenForm() throws {
        let presence = BoardPresence(online: true, session: 1_733_000_000_001, adapters: [
            AdapterSlots(name: "hci0", capacity: 3, free: 2), AdapterSlots(name: "hci1", capacity: 5, free: 5),
        ])
        let golden = #"{"v":1,"online":true,"session":1733000000001,"adapters":[{"name":"hci0","capacity":3,"free":2},"#
            + #"{"name":"hci1","capacity":5,"free":5}]}"#
        #expect(String(decoding: presence.encoded(), as: UTF8.self) == golden)
        #expect(try BoardPresence.decode(Self.bytes(golden)) == presence)
        // Whitespace and member order are the sender's business.
        let spaced = #" { "adapters" : [ ] , "session" : 0 , "online" : false , "v" : 1 } "#
        #expect(try BoardPresence.decode(Self.bytes(spaced)) == BoardPresence(online: false, session: 0, adapters: []))
    }

    @Test func sightingHasItsGoldenForm() throws {
        let sighting = Sighting(rssiTenths: -615, free: 2)
        #expect(String(decoding: sighting.encoded(), as: UTF8.self) == #"{"v":1,"rssi":-61.5,"free":2}"#)
        #expect(try Sighting.decode(sighting.encoded()) == sighting)
        // A sender writing more digits is read to the tenth.
        #expect(try Sighting.decode(Self.bytes(#"{"v":1,"rssi":-61.54,"free":0}"#)).rssiTenths == -615)
        #expect(try Sighting.decode(Self.bytes(#"{"v":1,"rssi":-60,"free":0}"#)).rssiTenths == -600)
    }

    @Test(arguments: [-1270, -615, -600, -5, 0, 5, 199, 200])
    func tenthsSurviveTheRoundTrip(tenths: Int) throws {
        let sighting = Sighting(rssiTenths: tenths, free: 1)
        #expect(try Sighting.decode(sighting.encoded()) == sighting)
    }

    @Test func leaseHasItsGoldenForm() throws {
        let lease = Lease(holder: "board-a", epoch: 7, state: .held, ttl: 6, scoreTenths: -615)
        let golden = #"{"v":1,"holder":"board-a","epoch":7,"state":"held","ttl":6,"score":-61.5}"#
        #expect(String(decoding: lease.encoded(), as: UTF8.self) == golden)
        #expect(try Lease.decode(Self.bytes(golden)) == lease)
        for state in Lease.State.allCases {
            var other = lease
            other.state = state
            #expect(try Lease.decode(other.encoded()) == other)
        }
        // The largest epoch is exact: it is never read through a Double.
        let big = Lease(holder: "b", epoch: FleetProtocol.maximumEpoch, state: .claimed, ttl: 300, scoreTenths: 0)
        #expect(try Lease.decode(big.encoded()).epoch == 9_007_199_254_740_992)
    }

    @Test func theTieBreakIsScoreThenLowerBoardID() {
        let a = Lease(holder: "a", epoch: 3, state: .claimed, ttl: 6, scoreTenths: -600)
        let b = Lease(holder: "b", epoch: 3, state: .claimed, ttl: 6, scoreTenths: -600)
        let louder = Lease(holder: "c", epoch: 3, state: .claimed, ttl: 6, scoreTenths: -550)
        let later = Lease(holder: "z", epoch: 4, state: .claimed, ttl: 6, scoreTenths: -900)
        #expect(a.beats(b) && !b.beats(a))
        #expect(louder.beats(a) && !a.beats(louder))
        #expect(later.beats(louder) && !louder.beats(later))
        #expect(!a.beats(a))
    }

    static let hostileLeases: [(String, String)] = [
        ("", "empty"),
        ("{", "truncated"),
        ("[]", "not an object"),
        ("null", "null"),
        (#"{"v":1,"holder":"a","epoch":1,"state":"held","ttl":6}"#, "missing score"),
        (#"{"v":1,"holder":"a","epoch":1,"state":"held","ttl":6,"score":-60,"extra":1}"#, "unknown field"),
        (#"{"v":1,"holder":"a","holder":"b","epoch":1,"state":"held","ttl":6,"score":-60}"#, "duplicate key"),
        (#"{"v":2,"holder":"a","epoch":1,"state":"held","ttl":6,"score":-60}"#, "version 2"),
        (#"{"v":1,"holder":"a","epoch":"1","state":"held","ttl":6,"score":-60}"#, "epoch as a string"),
        (#"{"v":1,"holder":"a","epoch":1.5,"state":"held","ttl":6,"score":-60}"#, "fractional epoch"),
        (#"{"v":1,"holder":"a","epoch":1e3,"state":"held","ttl":6,"score":-60}"#, "epoch with exponent"),
        (#"{"v":1,"holder":"a","epoch":-1,"state":"held","ttl":6,"score":-60}"#, "negative epoch"),
        (#"{"v":1,"holder":"a","epoch":0,"state":"held","ttl":6,"score":-60}"#, "epoch 0"),
        (#"{"v":1,"holder":"a","epoch":18446744073709551615,"state":"held","ttl":6,"score":-60}"#, "UInt64.max"),
        (#"{"v":1,"holder":"a","epoch":184467440737095516150,"state":"held","ttl":6,"score":-60}"#, "beyond UInt64"),
        (#"{"v":1,"holder":"a","epoch":1,"state":"held","ttl":6,"score":NaN}"#, "NaN"),
        (#"{"v":1,"holder":"a","epoch":1,"state":"held","ttl":6,"score":1e999}"#, "infinite score"),
        (#"{"v":1,"holder":"a","epoch":1,"state":"held","ttl":6,"score":-500}"#, "score out of range"),
        (#"{"v":1,"holder":"a","epoch":1,"state":"held","ttl":0,"score":-60}"#, "ttl 0"),
        (#"{"v":1,"holder":"a","epoch":1,"state":"held","ttl":100000,"score":-60}"#, "ttl huge"),
        (#"{"v":1,"holder":"a","epoch":1,"state":"stolen","ttl":6,"score":-60}"#, "unknown state"),
        (#"{"v":1,"holder":"a/b","epoch":1,"state":"held","ttl":6,"score":-60}"#, "holder with a slash"),
        (#"{"v":1,"holder":"","epoch":1,"state":"held","ttl":6,"score":-60}"#, "empty holder"),
        (#"{"v":1,"holder":"a","epoch":01,"state":"held","ttl":6,"score":-60}"#, "leading zero"),
        (#"{"v":1,"holder":"a","epoch":1,"state":"held","ttl":6,"score":+6}"#, "plus sign"),
        (#"{"v":1,"holder":"a","epoch":1,"state":"held","ttl":6,"score":-60} x"#, "trailing bytes"),
        (#"{"v":1,"holder":"a\u0000","epoch":1,"state":"held","ttl":6,"score":-60}"#, "escaped NUL in holder"),
        ("{\"v\":1,\"holder\":\"a\n\",\"epoch\":1,\"state\":\"held\",\"ttl\":6,\"score\":-60}", "raw newline"),
        (#"{"v":1,"holder":"a","epoch":1,"state":"held","ttl":6,"score":-60,"x":[[[[[[1]]]]]]}"#, "deep nesting"),
    ]

    @Test(arguments: hostileLeases)
    func aHostileLeaseIsATypedError(payload: String, why: String) {
        #expect(throws: FleetDecodeError.self, "\(why)") { try Lease.decode(Self.bytes(payload)) }
    }

    @Test func hostilePresenceAndSightingsAreTypedErrors() {
        let presences = [
            #"{"v":1,"online":"yes","session":1,"adapters":[]}"#,
            #"{"v":1,"online":true,"session":1,"adapters":{}}"#,
            #"{"v":1,"online":true,"session":1,"adapters":[{"name":"hci0","capacity":2,"free":3}]}"#,
            #"{"v":1,"online":true,"session":1,"adapters":[{"name":"hci0","capacity":65,"free":3}]}"#,
            #"{"v":1,"online":true,"session":1,"adapters":[{"name":"hci 0","capacity":2,"free":1}]}"#,
            #"{"v":1,"online":true,"session":-1,"adapters":[]}"#,
            #"{"v":1,"online":true,"session":1,"adapters":[1,2,3,4,5,6,7,8,9]}"#,
        ]
        for payload in presences {
            #expect(throws: FleetDecodeError.self, "\(payload)") { try BoardPresence.decode(Self.bytes(payload)) }
        }
        let sightings = [
            #"{"v":1,"rssi":-60}"#, #"{"v":1,"rssi":true,"free":1}"#, #"{"v":1,"rssi":-60,"free":1.5}"#,
            #"{"v":1,"rssi":-60,"free":100000}"#, #"{"v":1,"rssi":-60,"free":-0}"#,
            #"{"v":1,"rssi":-1e309,"free":1}"#, #"{"v":1,"rssi":-,"free":1}"#,
        ]
        for payload in sightings {
            #expect(throws: FleetDecodeError.self, "\(payload)") { try Sighting.decode(Self.bytes(payload)) }
        }
        // Over the size bound, and invalid UTF-8.
        let long = #"{"v":1,"rssi":-60,"free":1,"pad":""# + String(repeating: "x", count: 5000) + #""}"#
        #expect(throws: FleetDecodeError.malformed("payload of \(long.utf8.count) bytes is over 4096")) {
            try Sighting.decode(Self.bytes(long))
        }
        #expect(throws: FleetDecodeError.self) {
            try Lease.decode([0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x3A, 0x31, 0x7D])
        }
    }

    @Test func topicsParseAndOddSegmentsAreRefused() throws {
        #expect(try FleetTopic.parse("p/fleet/board/a-1", prefix: "p") == .board("a-1"))
        #expect(try FleetTopic.parse("p/fleet/seen/9ff167/a", prefix: "p") == .seen(serial: "9ff167", board: "a"))
        #expect(try FleetTopic.parse("ward/3/fleet/lease/9ff167", prefix: "ward/3") == .lease("9ff167"))
        for topic in FleetTopic.allExamples {
            #expect(try FleetTopic.parse(topic.text(prefix: "x/y"), prefix: "x/y") == topic)
        }
        let odd = ["p/fleet/seen/9ff167", "p/fleet/lease/a/b", "p/fleet/lease/+", "p/fleet/lease/#",
                   "p/fleet/lease/", "p/fleet/board/a b", "q/fleet/board/a", "p/fleet/lease/\u{FC}",
                   "p/fleet/other/a", "p/fleet/", "p/fleet", "p/fleet//a", "p/fleet/board/a\u{0}",
                   "p/fleet/board/" + String(repeating: "a", count: 65)]
        for topic in odd {
            #expect(throws: FleetDecodeError.self, "\(topic)") { try FleetTopic.parse(topic, prefix: "p") }
        }
    }

    @Test func errorsAreOneLine() {
        let errors: [FleetDecodeError] = [
            .malformed("x"), .badTopic("y"), .missingField("epoch"), .unknownField("z"),
            .wrongType(field: "epoch", expected: "an integer"), .outOfRange(field: "ttl", text: "0"),
            .unsupportedVersion(2),
        ]
        for error in errors {
            #expect(!error.description.contains("\n") && !error.description.isEmpty)
        }
    }

    /// 10^4 random and mutated payloads on every topic kind: each is decoded or refused, never trapped on, and a
    /// decoded one encodes back to something that decodes to the same value.
    @Test func randomAndMutatedBytesNeverTrap() {
        var random = SplitMix64(seed: 0xF1EE7)
        let valid: [[UInt8]] = [
            BoardPresence(online: true, session: 5, adapters: [AdapterSlots(name: "hci0", capacity: 3, free: 1)])
                .encoded(),
            Sighting(rssiTenths: -615, free: 2).encoded(),
            Lease(holder: "board-a", epoch: 7, state: .held, ttl: 6, scoreTenths: -615).encoded(),
        ]
        let topics = ["p/fleet/board/a", "p/fleet/seen/9ff167/a", "p/fleet/lease/9ff167"]
        let alphabet = Array(#"{}[]":,-.0123456789eEtrufalsn \"#.utf8)
        var decoded = 0
        for iteration in 0..<10_000 {
            var payload: [UInt8]
            switch iteration % 3 {
            case 0:
                payload = (0..<random.below(160)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            case 1:
                payload = (0..<random.below(80)).map { _ in alphabet[random.below(alphabet.count)] }
            default:
                payload = valid[random.below(valid.count)]
                for _ in 0...random.below(4) where !payload.isEmpty {
                    let at = random.below(payload.count)
                    switch random.below(3) {
                    case 0: payload[at] = alphabet[random.below(alphabet.count)]
                    case 1: payload.remove(at: at)
                    default: payload.insert(alphabet[random.below(alphabet.count)], at: at)
                    }
                }
            }
            for topic in topics {
                do throws(FleetDecodeError) {
                    let message = try FleetMessage.decode(topic: topic, payload: payload, prefix: "p")
                    decoded += 1
                    switch message {
                    case .board(_, let presence?):
                        #expect(try BoardPresence.decode(presence.encoded()) == presence)
                    case .seen(_, _, let sighting?):
                        #expect(try Sighting.decode(sighting.encoded()) == sighting)
                    case .lease(_, let lease?):
                        #expect(try Lease.decode(lease.encoded()) == lease)
                    default:
                        break
                    }
                } catch {
                    #expect(!error.description.isEmpty)
                }
            }
        }
        // The mutations keep some payloads valid: the round trip above was exercised.
        #expect(decoded > 100)
    }
}

extension FleetTopic {
    static let allExamples: [FleetTopic] = [.board("a"), .seen(serial: "9ff167", board: "b.2"), .lease("x_Y-1")]
}
