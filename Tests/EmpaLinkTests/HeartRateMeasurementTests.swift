import Testing
import TestSupport

@testable import EmpaLink

/// The Heart Rate Measurement parser (0x2A37, SPEC §16) against the specification's flag combinations, every length
/// that does not fit its flags, and random bytes.
@Suite struct HeartRateMeasurementTests {
    /// Builds a value as the GATT Specification Supplement lays it out, independently of the parser.
    static func encode(wide: Bool, contact: HeartRateMeasurement.Contact, energy: UInt16?, rate: UInt16,
                       rr: [UInt16], rrFlag: Bool) -> [UInt8] {
        var flags: UInt8 = wide ? 0x01 : 0
        switch contact {
        case .notSupported: break
        case .notDetected: flags |= 0x04
        case .detected: flags |= 0x06
        }
        if energy != nil { flags |= 0x08 }
        if rrFlag { flags |= 0x10 }
        var bytes = [flags]
        bytes += wide ? [UInt8(rate & 0xFF), UInt8(rate >> 8)] : [UInt8(rate)]
        if let energy { bytes += [UInt8(energy & 0xFF), UInt8(energy >> 8)] }
        for value in rr { bytes += [UInt8(value & 0xFF), UInt8(value >> 8)] }
        return bytes
    }

    static func parse(_ bytes: [UInt8]) -> Result<(HeartRateMeasurement, [UInt16]), HeartRateMeasurementError> {
        bytes.withUnsafeBytes { raw in
            do throws(HeartRateMeasurementError) {
                let value = try HeartRateMeasurement.parse(raw)
                return .success((value, (0..<value.rrCount).map { value.rrInterval($0, in: raw) }))
            } catch {
                return .failure(error)
            }
        }
    }

    @Test func decodesLiteralVectorsOfRealStraps() throws {
        // A Polar H10 notification: RR present, contact supported and detected, HR 72, one RR of 997/1024 s.
        let polar = try Self.parse([0x16, 0x48, 0xE5, 0x03]).get()
        #expect(polar.0.heartRate == 72)
        #expect(polar.0.contact == .detected)
        #expect(polar.0.energyExpended == nil)
        #expect(polar.1 == [997])
        // 16-bit HR 300, energy 0x0102 kJ, contact supported but lost, two RR values.
        let wide = try Self.parse([0x1D, 0x2C, 0x01, 0x02, 0x01, 0x00, 0x04, 0x01, 0x02]).get()
        #expect(wide.0.heartRate == 300)
        #expect(wide.0.contact == .notDetected)
        #expect(wide.0.energyExpended == 0x0102)
        #expect(wide.1 == [1024, 0x0201])
        // Flags 0: just an 8-bit rate, no contact feature.
        let bare = try Self.parse([0x00, 0x3C]).get()
        #expect(bare.0.heartRate == 60 && bare.0.contact == .notSupported && bare.0.rrCount == 0)
        // Reserved bits 5-7 are ignored.
        #expect(try Self.parse([0xE0, 0x3C]).get().0.heartRate == 60)
    }

    /// 8/16-bit HR × the three contact states × energy or not × 0…9 RR values: every field comes back.
    @Test(arguments: [false, true], [HeartRateMeasurement.Contact.notSupported, .notDetected, .detected])
    func decodesEveryFlagCombination(wide: Bool, contact: HeartRateMeasurement.Contact) throws {
        var random = SplitMix64(seed: 0x2A37)
        for energy in [nil, UInt16(0xBEEF)] as [UInt16?] {
            for count in 0...9 {
                let rate = wide ? UInt16(truncatingIfNeeded: random.next()) : UInt16(random.next() % 256)
                let rr = (0..<count).map { _ in UInt16(1 + random.next() % 0xFFFE) }
                let bytes = Self.encode(wide: wide, contact: contact, energy: energy, rate: rate, rr: rr,
                                        rrFlag: count > 0)
                let (value, intervals) = try Self.parse(bytes).get()
                #expect(value.heartRate == rate)
                #expect(value.contact == contact)
                #expect(value.energyExpended == energy)
                #expect(intervals == rr)
                #expect(value.rrInterval(count, in: UnsafeRawBufferPointer(start: nil, count: 0)) == 0)
            }
        }
    }

    /// RR flagged but none sent is a fit (zero or more values); the last of an RR list read past its end is 0.
    @Test func acceptsAnRRFlagWithNoIntervals() throws {
        let (value, intervals) = try Self.parse([0x10, 0x50]).get()
        #expect(value.rrCount == 0 && intervals.isEmpty)
    }

    /// Every flags byte at every length 0…40: accepted exactly when the length fits the flags, else the error that
    /// says why.
    @Test func rejectsEveryLengthThatDoesNotFitTheFlags() {
        for flags in 0...255 {
            let header = 1 + (flags & 1 != 0 ? 2 : 1) + (flags & 8 != 0 ? 2 : 0)
            let rrFlag = flags & 0x10 != 0
            for length in 0...40 {
                let bytes = [UInt8(flags)] + [UInt8](repeating: 0x11, count: max(0, length - 1))
                let input = length == 0 ? [] : bytes
                let expected: HeartRateMeasurementError?
                if length == 0 {
                    expected = .empty
                } else if length < header {
                    expected = .truncated(needed: header, available: length)
                } else if !rrFlag && length > header {
                    expected = .unexpectedBytes(count: length - header)
                } else if rrFlag && (length - header) % 2 != 0 {
                    expected = .oddRRBytes(count: length - header)
                } else {
                    expected = nil
                }
                switch Self.parse(input) {
                case .success(let (value, _)):
                    #expect(expected == nil, "flags \(flags) length \(length)")
                    #expect(value.rrCount == (length - header) / 2)
                case .failure(let error):
                    #expect(error == expected, "flags \(flags) length \(length)")
                }
            }
        }
    }

    /// 100 000 random values of random length never trap, and what parses re-encodes to the same bytes.
    @Test func survivesRandomPackets() throws {
        var random = SplitMix64(seed: 0xFEED_2A37)
        var parsed = 0
        for _ in 0..<100_000 {
            let length = Int(random.next() % 24)
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            guard case .success(let (value, intervals)) = Self.parse(bytes) else { continue }
            parsed += 1
            let again = Self.encode(wide: value.flags & 1 != 0, contact: value.contact, energy: value.energyExpended,
                                    rate: value.heartRate, rr: intervals, rrFlag: value.flags & 0x10 != 0)
            #expect(Array(again.dropFirst()) == Array(bytes.dropFirst()))
        }
        #expect(parsed > 1000)
    }
}
