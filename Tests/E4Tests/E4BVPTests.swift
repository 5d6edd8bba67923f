import E4
import Testing
import TestSupport

@Suite struct E4BVPTests {
    /// Green delta +1 at k = 0 and red delta −1 at k = 1, all else 0, counter 0:
    /// bits 0…6 = 0000001, bits 7…13 = 1111111, rest 0 →
    /// byte 0 = 0000001|1 = 0x03, byte 1 = 111111|00 = 0xFC, bytes 2…19 = 0.
    static let simple: [UInt8] = [0x03, 0xFC] + [UInt8](repeating: 0, count: 18)

    /// Deltas written as 7-bit two's complement (−64 → 1000000, 63 → 0111111), concatenated MSB first in
    /// the order g0 r0 g1 r1 … g10 r10, then the counter 45 = 101101 in the last 6 bits, cut into bytes
    /// (Python one-off: `''.join(format(d & 0x7F, '07b') for d in deltas) + format(45, '06b')`).
    /// green = [1, −1, 63, −64, 0, 5, −5, 10, −10, 32, −33], red = [0, 2, −2, 7, −7, 63, −64, 1, −1, 20, −20].
    /// First bytes by hand: 0000001 0000000 1111111 0000010 … → 00000010 00000011 11111000 0010…
    /// = 0x02 0x03 0xF8 0x2…; last byte: bits 152…153 are the end of r10 (−20 = 1101100 → "00"), then 101101
    /// → 00101101 = 0x2D.
    static let packet1: [UInt8] = [
        0x02, 0x03, 0xF8, 0x27, 0xFF, 0xA0, 0x07, 0x01, 0xE4, 0x2B,
        0xFF, 0x70, 0x05, 0x01, 0xED, 0xFD, 0x01, 0x4B, 0xFB, 0x2D,
    ]
    /// All green −64 (1000000), all red 63 (0111111): the 14-bit pattern 10000000111111 repeated, counter 47
    /// (101111) → 10000000 11111110 00000011 11111000 … = 0x80 0xFE 0x03 0xF8 …, last byte 11|101111 = 0xEF.
    static let packet2: [UInt8] = [
        0x80, 0xFE, 0x03, 0xF8, 0x0F, 0xE0, 0x3F, 0x80, 0xFE, 0x03,
        0xF8, 0x0F, 0xE0, 0x3F, 0x80, 0xFE, 0x03, 0xF8, 0x0F, 0xEF,
    ]

    @Test func decodesSimpleGoldenVector() throws {
        var decoder = E4BVPDecoder()
        var packet = E4BVPPacket()
        let continuity = try decoder.decode(Self.simple.span.bytes, into: &packet)
        #expect(continuity == .first)
        #expect(packet.counter == 0)
        #expect(packet.green.array == [Int64](repeating: 1, count: 11))
        #expect(packet.red.array == [Int64](repeating: -1, count: 11))
        // The baseline starts at the first green count, and the count never moves: the value stays 0.
        #expect(packet.value.array == [Float](repeating: 0, count: 11))
    }

    @Test func decodesGoldenVectorsWithRunningCountsAndBaseline() throws {
        var decoder = E4BVPDecoder()
        var packet = E4BVPPacket()
        #expect(try decoder.decode(Self.packet1.span.bytes, into: &packet) == .first)
        #expect(packet.counter == 45)
        // Running sums of the deltas above, starting at 0.
        #expect(packet.green.array == [1, 0, 63, -1, -1, 4, -1, 9, -1, 31, -2])
        #expect(packet.red.array == [0, 2, 0, 7, 0, 63, -1, 0, -1, 19, -1])
        // value = baseline − green, baseline₀ = green₀, baselineₙ += α (greenₙ − baselineₙ), α = 1 − e^(−1/128);
        // computed in double precision by the Python one-off and rounded to Float.
        let expected1: [Float] = [
            0.0, 0.99221796, -61.525234, 2.4555075, 2.4363987, -2.5436513, 2.4372332, -7.503913, 2.4766624,
            -29.293585, 3.6775713,
        ]
        for (got, want) in zip(packet.value.array, expected1) { #expect(abs(got - want) < 1e-3) }

        // Counter 47 after 45: one packet (46) lost; integration continues from the last counts.
        #expect(try decoder.decode(Self.packet2.span.bytes, into: &packet) == .gap(lost: 1))
        #expect(packet.counter == 47)
        #expect(packet.green.array == [-66, -130, -194, -258, -322, -386, -450, -514, -578, -642, -706])
        #expect(packet.red.array == [62, 125, 188, 251, 314, 377, 440, 503, 566, 629, 692])
        let expected2: [Float] = [
            67.1509, 130.13028, 192.61954, 254.62251, 316.14297, 377.18466, 437.75134, 497.84668, 557.47437,
            616.638, 675.34125,
        ]
        for (got, want) in zip(packet.value.array, expected2) { #expect(abs(got - want) < 1e-3) }
        #expect(decoder.statistics.packets == 2)
        #expect(decoder.statistics.lostPackets == 1)
    }

    @Test func encoderProducesTheGoldenBytes() {
        var green = inline11([1, -1, 63, -64, 0, 5, -5, 10, -10, 32, -33])
        var red = inline11([0, 2, -2, 7, -7, 63, -64, 1, -1, 20, -20])
        var packet = E4PacketBytes()
        let clamped = E4BVP.encode(green: &green, red: &red, counter: 45, into: &packet)
        #expect(clamped == 0)
        #expect([UInt8](packet) == Self.packet1)
    }

    @Test(arguments: [0, 1, 19, 21, 40])
    func rejectsWrongLength(length: Int) {
        var decoder = E4BVPDecoder()
        var packet = E4BVPPacket()
        let bytes = [UInt8](repeating: 0x55, count: length)
        let error = decodeError { () throws(E4DecodeError) in try decoder.decode(bytes.span.bytes, into: &packet) }
        #expect(error == .wrongLength(expected: 20, actual: length))
        #expect(decoder.statistics.decodeErrors == 1)
        #expect(decoder.statistics.packets == 0)
    }

    @Test func duplicateIsDroppedWithoutIntegratingTwice() throws {
        var decoder = E4BVPDecoder()
        var packet = E4BVPPacket()
        _ = try decoder.decode(Self.packet1.span.bytes, into: &packet)
        let green = decoder.green
        let error = decodeError { () throws(E4DecodeError) in
            try decoder.decode(Self.packet1.span.bytes, into: &packet)
        }
        #expect(error == .duplicate(counter: 45))
        #expect(decoder.green == green)
        #expect(decoder.statistics.duplicates == 1)
        #expect(decoder.statistics.packets == 1)
    }

    @Test func resetRestartsCountsAndCounter() throws {
        var decoder = E4BVPDecoder()
        var packet = E4BVPPacket()
        _ = try decoder.decode(Self.packet1.span.bytes, into: &packet)
        decoder.reset()
        #expect(try decoder.decode(Self.packet1.span.bytes, into: &packet) == .first)
        #expect(packet.green[0] == 1)
        #expect(packet.value[0] == 0)
    }

    @Test func roundTripsRandomDeltas() throws {
        var rng = SplitMix64(seed: 0xB0F)
        var decoder = E4BVPDecoder()
        var packet = E4BVPPacket()
        var bytes = E4PacketBytes()
        var green: Int64 = 0
        var red: Int64 = 0
        for index in 0..<2_000 {
            var g = InlineArray<11, Int>(repeating: 0)
            var r = InlineArray<11, Int>(repeating: 0)
            for sample in 0..<11 {
                g[sample] = Int.random(in: -64...63, using: &rng)
                r[sample] = Int.random(in: -64...63, using: &rng)
            }
            let wantG = g.array
            let wantR = r.array
            let counter = UInt8(index % 64)
            #expect(E4BVP.encode(green: &g, red: &r, counter: counter, into: &bytes) == 0)
            #expect(g.array == wantG && r.array == wantR)
            let continuity = try bytes.withBytes { (span) throws(E4DecodeError) in
                try decoder.decode(span, into: &packet)
            }
            #expect(continuity == (index == 0 ? .first : .next))
            #expect(packet.counter == counter)
            for sample in 0..<11 {
                green += Int64(wantG[sample])
                red += Int64(wantR[sample])
                #expect(packet.green[sample] == green)
                #expect(packet.red[sample] == red)
            }
        }
        #expect(decoder.statistics.lostPackets == 0)
    }

    @Test func encoderClampsOutOfRangeDeltasAndReportsThem() throws {
        var green = inline11([64, -65, 1000, 0, 0, 0, 0, 0, 0, 0, 63])
        var red = inline11([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -64])
        var bytes = E4PacketBytes()
        let clamped = E4BVP.encode(green: &green, red: &red, counter: 70, into: &bytes)
        #expect(clamped == 3)
        #expect(green.array == [63, -64, 63, 0, 0, 0, 0, 0, 0, 0, 63])
        var decoder = E4BVPDecoder()
        var packet = E4BVPPacket()
        _ = try bytes.withBytes { (span) throws(E4DecodeError) in try decoder.decode(span, into: &packet) }
        #expect(packet.counter == 70 & 0x3F)
        #expect(packet.green[2] == 63 - 64 + 63)
    }

    @Test func statefulEncoderCarriesClampedRemainderAndMatchesDecoder() throws {
        var rng = SplitMix64(seed: 7)
        var encoder = E4BVPEncoder()
        var decoder = E4BVPDecoder()
        var packet = E4BVPPacket()
        var bytes = E4PacketBytes()
        var level = 0
        var totalClamped = 0
        for _ in 0..<500 {
            var g = InlineArray<11, Int>(repeating: 0)
            var r = InlineArray<11, Int>(repeating: 0)
            for sample in 0..<11 {
                level += Int.random(in: -150...150, using: &rng)
                g[sample] = level
                r[sample] = -level / 2
            }
            totalClamped += encoder.encode(green: &g, red: &r, into: &bytes)
            _ = try bytes.withBytes { (span) throws(E4DecodeError) in try decoder.decode(span, into: &packet) }
            // What the encoder says it sent is exactly what the decoder reconstructs.
            for sample in 0..<11 {
                #expect(packet.green[sample] == Int64(g[sample]))
                #expect(packet.red[sample] == Int64(r[sample]))
            }
        }
        #expect(totalClamped > 0)
        #expect(decoder.statistics.lostPackets == 0)
        // Steps of at most ±150 per sample on a 63-per-sample channel still track: the sent signal catches up
        // whenever the wanted one slows down, so the final error is bounded by the last packets' backlog.
        #expect(abs(encoder.sentGreen - level) < 150 * 11 * 4)
    }

    @Test func firstSampleAnchorsBaselineSoSignalStartsAtZero() throws {
        var decoder = E4BVPDecoder()
        var packet = E4BVPPacket()
        var bytes = E4PacketBytes()
        var g = inline11([50] + [Int](repeating: 0, count: 10))
        var r = inline11([])
        E4BVP.encode(green: &g, red: &r, counter: 0, into: &bytes)
        _ = try bytes.withBytes { (span) throws(E4DecodeError) in try decoder.decode(span, into: &packet) }
        #expect(packet.green[0] == 50)
        #expect(packet.value.array == [Float](repeating: 0, count: 11))
    }

    @Test func baselineDecaysWithTwoSecondTimeConstantAfterAStep() throws {
        // Packet 0 flat at 0 anchors the baseline at 0; packet 1 steps green by +50 at its sample 0 (global
        // sample 11). From then value = −50 (1 − α)^(n+1) n samples after the step, and (1 − α)^128 = e^(−1):
        // 127 samples after the step (global 138 = packet 12, sample 6) the value is −50/e.
        var decoder = E4BVPDecoder()
        var packet = E4BVPPacket()
        var bytes = E4PacketBytes()
        for index in 0...12 {
            var g = inline11(index == 1 ? [50] : [])
            var r = inline11([])
            E4BVP.encode(green: &g, red: &r, counter: UInt8(index), into: &bytes)
            _ = try bytes.withBytes { (span) throws(E4DecodeError) in try decoder.decode(span, into: &packet) }
            if index == 1 { #expect(abs(packet.value[0] - (-50 * Float(1 - E4BVPDecoder.baselineAlpha))) < 1e-4) }
        }
        #expect(abs(packet.value[6] - (-50 * 0.36787944)) < 1e-3)
    }
}
