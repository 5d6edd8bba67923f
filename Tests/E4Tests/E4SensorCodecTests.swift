import E4
import Testing
import TestSupport

@Suite struct E4SensorCodecTests {
    // MARK: ACC — 6 × (x, y, z) int8, then u16 LE counter.

    /// x0 = 0x01 (+1), y0 = 0xFF (−1), z0 = 0x40 (+64 = 1 g), x1 = 0x80 (−128), y1 = 0x7F (127), z1 = 0x00,
    /// samples 2…5 = (0x02, 0x03, 0x04) each; counter 0x1234 little-endian → 0x34 0x12.
    static let acc: [UInt8] = [
        0x01, 0xFF, 0x40, 0x80, 0x7F, 0x00, 0x02, 0x03, 0x04, 0x02,
        0x03, 0x04, 0x02, 0x03, 0x04, 0x02, 0x03, 0x04, 0x34, 0x12,
    ]

    @Test func decodesACCGoldenVector() throws {
        var decoder = E4ACCDecoder()
        var packet = E4ACCPacket()
        #expect(try decoder.decode(Self.acc.span.bytes, into: &packet) == .first)
        #expect(packet.counter == 0x1234)
        #expect(packet.x.array == [1, -128, 2, 2, 2, 2])
        #expect(packet.y.array == [-1, 127, 3, 3, 3, 3])
        #expect(packet.z.array == [64, 0, 4, 4, 4, 4])
    }

    @Test func roundTripsRandomACC() throws {
        var rng = SplitMix64(seed: 0xACC)
        var decoder = E4ACCDecoder()
        var packet = E4ACCPacket()
        var bytes = E4PacketBytes()
        var counter = UInt16.random(in: 0...UInt16.max, using: &rng)
        for index in 0..<5_000 {
            var x = InlineArray<6, Int8>(repeating: 0)
            var y = InlineArray<6, Int8>(repeating: 0)
            var z = InlineArray<6, Int8>(repeating: 0)
            for sample in 0..<6 {
                x[sample] = Int8.random(in: .min ... .max, using: &rng)
                y[sample] = Int8.random(in: .min ... .max, using: &rng)
                z[sample] = Int8.random(in: .min ... .max, using: &rng)
            }
            E4ACC.encode(x: x, y: y, z: z, counter: counter, into: &bytes)
            let continuity = try bytes.withBytes { (span) throws(E4DecodeError) in
                try decoder.decode(span, into: &packet)
            }
            #expect(continuity == (index == 0 ? .first : .next))
            #expect(packet.counter == counter)
            #expect(packet.x.array == x.array && packet.y.array == y.array && packet.z.array == z.array)
            counter &+= 1
        }
    }

    // MARK: GSR — 6 × u24 BE codes, then u16 LE counter.

    /// Codes 0x0F4240 = 1 000 000 (→ 1 µS), 0x000000 (no contact → 0 µS), 0x030D40 = 200 000 (→ 5 µS),
    /// 0x0186A0 = 100 000 (→ 10 µS), 0x00C350 = 50 000 (→ 20 µS), 0xFFFFFF = 16 777 215 (→ 0.0596 µS);
    /// counter 0xFFFF → 0xFF 0xFF.
    static let gsr: [UInt8] = [
        0x0F, 0x42, 0x40, 0x00, 0x00, 0x00, 0x03, 0x0D, 0x40, 0x01,
        0x86, 0xA0, 0x00, 0xC3, 0x50, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
    ]

    @Test func decodesGSRGoldenVector() throws {
        var decoder = E4GSRDecoder()
        var packet = E4GSRPacket()
        _ = try decoder.decode(Self.gsr.span.bytes, into: &packet)
        #expect(packet.counter == 0xFFFF)
        #expect(packet.codes.array == [1_000_000, 0, 200_000, 100_000, 50_000, 16_777_215])
        let want: [Float] = [1, 0, 5, 10, 20, 0.059604648]
        for (got, expected) in zip(packet.microsiemens.array, want) { #expect(abs(got - expected) < 1e-6) }
    }

    @Test func roundTripsRandomGSRAndClampsCodesAbove24Bits() throws {
        var rng = SplitMix64(seed: 0x65E)
        var decoder = E4GSRDecoder()
        var packet = E4GSRPacket()
        var bytes = E4PacketBytes()
        for index in 0..<5_000 {
            var codes = InlineArray<6, UInt32>(repeating: 0)
            for sample in 0..<6 { codes[sample] = UInt32.random(in: 0...0x1FF_FFFF, using: &rng) }
            let wanted = codes.array
            let clamped = E4GSR.encode(codes: &codes, counter: UInt16(index), into: &bytes)
            #expect(clamped == wanted.filter { $0 > 0xFF_FFFF }.count)
            #expect(codes.array == wanted.map { min($0, 0xFF_FFFF) })
            _ = try bytes.withBytes { (span) throws(E4DecodeError) in try decoder.decode(span, into: &packet) }
            #expect(packet.codes.array == codes.array)
        }
    }

    @Test func gsrConversionInverts() {
        #expect(E4GSR.code(microsiemens: 5) == 200_000)
        #expect(E4GSR.code(microsiemens: 0) == 0)
        #expect(E4GSR.code(microsiemens: -1) == 0)
        #expect(E4GSR.code(microsiemens: .nan) == 0)
        #expect(E4GSR.code(microsiemens: 1e-9) == 0xFF_FFFF)
        #expect(E4GSR.code(microsiemens: .infinity) == 1)
        #expect(E4GSR.microsiemens(code: 0) == 0)
    }

    // MARK: Temperature — 8 × u16 LE raw, then u32 LE counter.

    /// raw 15 315 = 0x3BD3 (→ 306.30 − 273.15 = 33.15 °C) as D3 3B; 15 500 = 0x3C8C (→ 36.85 °C) as 8C 3C;
    /// 11 658 = 0x2D8A (→ −39.99 °C) as 8A 2D; 19 407 = 0x4BCF (→ 114.99 °C) as CF 4B; then 15 315 × 4;
    /// counter 0x01020304 → 04 03 02 01.
    static let temperature: [UInt8] = [
        0xD3, 0x3B, 0x8C, 0x3C, 0x8A, 0x2D, 0xCF, 0x4B, 0xD3, 0x3B,
        0xD3, 0x3B, 0xD3, 0x3B, 0xD3, 0x3B, 0x04, 0x03, 0x02, 0x01,
    ]

    @Test func decodesTemperatureGoldenVector() throws {
        var decoder = E4TemperatureDecoder()
        var packet = E4TemperaturePacket()
        _ = try decoder.decode(Self.temperature.span.bytes, into: &packet)
        #expect(packet.counter == 0x0102_0304)
        #expect(packet.raw.array == [15_315, 15_500, 11_658, 19_407, 15_315, 15_315, 15_315, 15_315])
        let want: [Float] = [33.15, 36.85, -39.99, 114.99, 33.15, 33.15, 33.15, 33.15]
        for (got, expected) in zip(packet.celsius.array, want) { #expect(abs(got - expected) < 1e-3) }
    }

    @Test func rejectsTemperatureOutsideSensorRangeWithoutMovingTheCounter() throws {
        var decoder = E4TemperatureDecoder()
        var packet = E4TemperaturePacket()
        _ = try decoder.decode(Self.temperature.span.bytes, into: &packet)
        var bad = Self.temperature
        bad[6] = 0x00  // sample 3 raw = 0x4B00 = 19 200: still valid
        bad[7] = 0x00  // sample 3 raw = 0x0000: −273.15 °C
        bad[16] = 0x05  // next counter
        let error = decodeError { () throws(E4DecodeError) in try decoder.decode(bad.span.bytes, into: &packet) }
        #expect(error == .invalidContent(.temperatureRaw(index: 3, raw: 0)))
        #expect(decoder.flow.last == 0x0102_0304)
        #expect(decoder.statistics.decodeErrors == 1)
        #expect(packet.raw[3] == 19_407)
    }

    @Test func roundTripsRandomTemperature() throws {
        var rng = SplitMix64(seed: 0x7E)
        var decoder = E4TemperatureDecoder()
        var packet = E4TemperaturePacket()
        var bytes = E4PacketBytes()
        var counter = UInt32.max - 100
        for _ in 0..<5_000 {
            var raw = InlineArray<8, UInt16>(repeating: 0)
            for sample in 0..<8 { raw[sample] = UInt16.random(in: E4Temperature.validRaw, using: &rng) }
            E4Temperature.encode(raw: raw, counter: counter, into: &bytes)
            _ = try bytes.withBytes { (span) throws(E4DecodeError) in try decoder.decode(span, into: &packet) }
            #expect(packet.raw.array == raw.array)
            #expect(packet.counter == counter)
            counter &+= 1
        }
        #expect(decoder.statistics.lostPackets == 0 && decoder.statistics.restarts == 0)
    }

    @Test func temperatureConversionInverts() {
        #expect(E4Temperature.raw(celsius: 33.15) == 15_315)
        #expect(E4Temperature.raw(celsius: -300) == E4Temperature.validRaw.lowerBound)
        #expect(E4Temperature.raw(celsius: 1e9) == E4Temperature.validRaw.upperBound)
        #expect(E4Temperature.raw(celsius: .nan) == E4Temperature.validRaw.lowerBound)
    }

    // MARK: Battery, control, command.

    @Test(arguments: [(UInt8(0), Float(0)), (50, 0.5), (83, 0.83), (100, 1)])
    func decodesBattery(percent: UInt8, level: Float) throws {
        var decoder = E4BatteryDecoder()
        let bytes: [UInt8] = [percent]
        #expect(try decoder.decode(bytes.span.bytes) == E4BatteryReading(percent: percent, level: level))
        let longer: [UInt8] = [percent, 0xEE, 0xEE]
        #expect(try decoder.decode(longer.span.bytes).percent == percent)
    }

    @Test func rejectsBatteryAbove100AndEmpty() {
        var decoder = E4BatteryDecoder()
        for percent in UInt8(101)...UInt8(255) {
            let bytes: [UInt8] = [percent]
            let error = decodeError { () throws(E4DecodeError) in try decoder.decode(bytes.span.bytes) }
            #expect(error == .invalidContent(.batteryPercent(percent)))
        }
        let empty: [UInt8] = []
        #expect(decodeError { () throws(E4DecodeError) in try decoder.decode(empty.span.bytes) }
            == .tooShort(minimum: 1, actual: 0))
        #expect(decoder.statistics.decodeErrors == 156)
        #expect(decoder.statistics.packets == 0)
    }

    @Test func decodesControlTagsAndIgnoresOtherEvents() throws {
        var decoder = E4ControlDecoder()
        let tag: [UInt8] = [0x01]
        let tagLonger: [UInt8] = [0x01, 0x00]
        let other: [UInt8] = [0x02]
        let empty: [UInt8] = []
        #expect(try decoder.decode(tag.span.bytes) == .tag)
        #expect(try decoder.decode(tagLonger.span.bytes) == .tag)
        #expect(try decoder.decode(other.span.bytes) == .ignored(0x02))
        #expect(decodeError { () throws(E4DecodeError) in try decoder.decode(empty.span.bytes) }
            == .tooShort(minimum: 1, actual: 0))
        var bytes = E4PacketBytes()
        E4Control.encodeTag(into: &bytes)
        #expect([UInt8](bytes) == [0x01])
    }

    /// `01` then 1 700 000 000 = 0x6553F100 little-endian → 00 F1 53 65.
    @Test func commandGoldenVectorAndRoundTrip() throws {
        let golden: [UInt8] = [0x01, 0x00, 0xF1, 0x53, 0x65]
        #expect(try E4Command.decode(golden.span.bytes) == .start(unixTime: 1_700_000_000))
        var bytes = E4PacketBytes()
        E4Command.start(unixTime: 1_700_000_000).encode(into: &bytes)
        #expect([UInt8](bytes) == golden)
        let unknown: [UInt8] = [0x02, 0, 0, 0, 0]
        #expect(decodeError { () throws(E4DecodeError) in try E4Command.decode(unknown.span.bytes) }
            == .invalidContent(.commandOpcode(2)))
        for length in [0, 1, 4, 6, 20] {
            let bytes = [UInt8(0x01)] + [UInt8](repeating: 0, count: max(0, length - 1))
            let input = length == 0 ? [] : bytes
            let error = decodeError { () throws(E4DecodeError) in try E4Command.decode(input.span.bytes) }
            let want: E4DecodeError =
                length == 0 ? .tooShort(minimum: 1, actual: 0) : .wrongLength(expected: 5, actual: length)
            #expect(error == want)
        }
    }

    // MARK: Every wrong length of every sensor characteristic.

    @Test func everyWrongLengthOfEverySensorPacketIsCountedAndDropped() {
        var bvp = E4BVPDecoder()
        var acc = E4ACCDecoder()
        var gsr = E4GSRDecoder()
        var temp = E4TemperatureDecoder()
        var bvpPacket = E4BVPPacket()
        var accPacket = E4ACCPacket()
        var gsrPacket = E4GSRPacket()
        var tempPacket = E4TemperaturePacket()
        var wrong: UInt64 = 0
        for length in 0...600 where length != 20 {
            wrong += 1
            let bytes = [UInt8](repeating: 0x3C, count: length)
            let want = E4DecodeError.wrongLength(expected: 20, actual: length)
            #expect(decodeError { () throws(E4DecodeError) in
                try bvp.decode(bytes.span.bytes, into: &bvpPacket)
            } == want)
            #expect(decodeError { () throws(E4DecodeError) in
                try acc.decode(bytes.span.bytes, into: &accPacket)
            } == want)
            #expect(decodeError { () throws(E4DecodeError) in
                try gsr.decode(bytes.span.bytes, into: &gsrPacket)
            } == want)
            #expect(decodeError { () throws(E4DecodeError) in
                try temp.decode(bytes.span.bytes, into: &tempPacket)
            } == want)
        }
        for statistics in [bvp.statistics, acc.statistics, gsr.statistics, temp.statistics] {
            #expect(statistics.decodeErrors == wrong)
            #expect(statistics.packets == 0)
        }
    }
}
