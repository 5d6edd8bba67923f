import E4
import Testing
import TestSupport

/// Random bytes through every decoder: nothing traps, and every packet is accounted for exactly once.
@Suite struct E4FuzzTests {
    static let count = 100_000

    /// 1 in 4 at the right length (so content and counter paths run), the rest 0…40 bytes.
    private static func randomPacket(_ rng: inout SplitMix64, length: Int) -> [UInt8] {
        let size = Int.random(in: 0...3, using: &rng) == 0 ? length : Int.random(in: 0...40, using: &rng)
        return rng.bytes(count: size)
    }

    private static func account(_ statistics: E4StreamStatistics, returned: Int, thrown: Int) {
        #expect(Int(statistics.packets) == returned)
        #expect(Int(statistics.duplicates + statistics.decodeErrors) == thrown)
        #expect(returned + thrown == Self.count)
    }

    @Test func bvpNeverTraps() {
        var rng = SplitMix64(seed: 1)
        var decoder = E4BVPDecoder()
        var packet = E4BVPPacket()
        var returned = 0
        var thrown = 0
        for _ in 0..<Self.count {
            let bytes = Self.randomPacket(&rng, length: 20)
            do throws(E4DecodeError) {
                _ = try decoder.decode(bytes.span.bytes, into: &packet)
                returned += 1
                #expect(bytes.count == 20)
                #expect(packet.value.array.allSatisfy { $0.isFinite })
            } catch {
                thrown += 1
                if case .wrongLength = error { #expect(bytes.count != 20) }
            }
        }
        Self.account(decoder.statistics, returned: returned, thrown: thrown)
    }

    @Test func accNeverTraps() {
        var rng = SplitMix64(seed: 2)
        var decoder = E4ACCDecoder()
        var packet = E4ACCPacket()
        var returned = 0
        var thrown = 0
        for _ in 0..<Self.count {
            let bytes = Self.randomPacket(&rng, length: 20)
            do throws(E4DecodeError) {
                _ = try decoder.decode(bytes.span.bytes, into: &packet)
                returned += 1
            } catch {
                thrown += 1
            }
        }
        Self.account(decoder.statistics, returned: returned, thrown: thrown)
    }

    @Test func gsrNeverTraps() {
        var rng = SplitMix64(seed: 3)
        var decoder = E4GSRDecoder()
        var packet = E4GSRPacket()
        var returned = 0
        var thrown = 0
        for _ in 0..<Self.count {
            let bytes = Self.randomPacket(&rng, length: 20)
            do throws(E4DecodeError) {
                _ = try decoder.decode(bytes.span.bytes, into: &packet)
                returned += 1
                #expect(packet.microsiemens.array.allSatisfy { $0.isFinite && $0 >= 0 })
            } catch {
                thrown += 1
            }
        }
        Self.account(decoder.statistics, returned: returned, thrown: thrown)
    }

    @Test func temperatureNeverTraps() {
        var rng = SplitMix64(seed: 4)
        var decoder = E4TemperatureDecoder()
        var packet = E4TemperaturePacket()
        var returned = 0
        var thrown = 0
        var invalid = 0
        for _ in 0..<Self.count {
            let bytes = Self.randomPacket(&rng, length: 20)
            do throws(E4DecodeError) {
                _ = try decoder.decode(bytes.span.bytes, into: &packet)
                returned += 1
                #expect(packet.celsius.array.allSatisfy { $0 >= -40.01 && $0 <= 115.01 })
            } catch {
                thrown += 1
                if case .invalidContent = error { invalid += 1 }
            }
        }
        Self.account(decoder.statistics, returned: returned, thrown: thrown)
        // Random raw values almost never all fall in the sensor range: garbage is caught as content.
        #expect(invalid > 0)
    }

    @Test func batteryNeverTraps() {
        var rng = SplitMix64(seed: 5)
        var decoder = E4BatteryDecoder()
        var returned = 0
        var thrown = 0
        for _ in 0..<Self.count {
            let bytes = Self.randomPacket(&rng, length: 1)
            do throws(E4DecodeError) {
                let reading = try decoder.decode(bytes.span.bytes)
                returned += 1
                #expect(reading.level >= 0 && reading.level <= 1)
            } catch {
                thrown += 1
            }
        }
        Self.account(decoder.statistics, returned: returned, thrown: thrown)
    }

    @Test func controlNeverTraps() {
        var rng = SplitMix64(seed: 6)
        var decoder = E4ControlDecoder()
        var returned = 0
        var thrown = 0
        for _ in 0..<Self.count {
            let bytes = Self.randomPacket(&rng, length: 1)
            do throws(E4DecodeError) {
                _ = try decoder.decode(bytes.span.bytes)
                returned += 1
            } catch {
                thrown += 1
                #expect(bytes.isEmpty)
            }
        }
        Self.account(decoder.statistics, returned: returned, thrown: thrown)
    }

    @Test func commandNeverTraps() {
        var rng = SplitMix64(seed: 7)
        var started = 0
        for _ in 0..<Self.count {
            let bytes = Self.randomPacket(&rng, length: 5)
            do throws(E4DecodeError) {
                _ = try E4Command.decode(bytes.span.bytes)
                started += 1
                #expect(bytes.count == 5 && bytes[0] == 1)
            } catch {}
        }
        #expect(started > 0)
    }
}
