@testable import Agent
import Testing

/// The JSON writer's numbers and strings (SPEC §10): what every payload is made of.
@Suite struct JSONBufferTests {
    static func text(_ write: (JSONBuffer) -> Void, capacity: Int = 256) -> String {
        let buffer = JSONBuffer(capacity: capacity)
        write(buffer)
        return String(decoding: buffer.bytes, as: UTF8.self)
    }

    @Test(arguments: [
        (36.5, 2, "36.5"), (-0.25, 2, "-0.25"), (1795961731.305037, 6, "1795961731.305037"), (0.0, 3, "0"),
        (1.0, 3, "1"), (-1.0, 0, "-1"), (100.0, 2, "100"), (0.1 + 0.2, 4, "0.3"),
        // Halves round away from zero (after scaling, which may itself be inexact).
        (2.675, 2, "2.68"), (123.4565, 3, "123.457"), (0.0005, 3, "0.001"), (-0.0005, 3, "-0.001"),
        // Below the precision: zero, and never "-0".
        (-0.0004, 3, "0"), (1e-7, 6, "0"), (-0.0, 2, "0"),
        // Leading zeros of the fraction are kept, trailing ones dropped.
        (1.05, 2, "1.05"), (1.5000, 4, "1.5"), (-12.0625, 4, "-12.0625"), (0.0101, 4, "0.0101"),
    ])
    func decimalsAreRoundedAndTrimmed(value: Double, decimals: Int, expected: String) {
        #expect(Self.text { $0.append(value, decimals: decimals) } == expected, "\(value) with \(decimals)")
    }

    @Test(arguments: [Double.nan, -Double.nan, .infinity, -.infinity, .signalingNaN])
    func nonFiniteNumbersAreNull(value: Double) {
        #expect(Self.text { $0.append(value, decimals: 3) } == "null")
    }

    @Test func hugeNumbersKeepTheirValue() {
        // Beyond Int64 at the precision asked for: exponent notation, still the number (it was once clamped to
        // 9e18, a wrong value).
        #expect(Self.text { $0.append(1e300, decimals: 3) } == "1e+300")
        #expect(Self.text { $0.append(-1e300, decimals: 3) } == "-1e+300")
        #expect(Self.text { $0.append(Double(Int64.max), decimals: 0) } == "9.223372036854776e+18")
        #expect(Self.text { $0.append(1e16, decimals: 3) } == "1e+16")
        #expect(Self.text { $0.append(1e15, decimals: 3) } == "1000000000000000")
    }

    @Test(arguments: [
        (Int64(0), "0"), (7, "7"), (-7, "-7"), (1_000_000, "1000000"), (Int64.max, "9223372036854775807"),
        (Int64.min, "-9223372036854775808"),
    ])
    func integers(value: Int64, expected: String) {
        #expect(Self.text { $0.append(integer: value) } == expected)
    }

    @Test func stringsAreEscaped() {
        let text = Self.text { $0.append(string: "a\"b\\c\nd\re\tf\u{01}g\u{1F}é😀") }
        #expect(text == #""a\"b\\c\nd\re\tf\u0001g\u001fé😀""#)
    }

    @Test func overflowIsFlaggedInsteadOfTruncatingSilently() {
        let buffer = JSONBuffer(capacity: 64)
        for _ in 0..<70 { buffer.append(UInt8(ascii: "x")) }
        #expect(buffer.overflowed)
        #expect(buffer.count == 64)
        buffer.reset()
        #expect(!buffer.overflowed && buffer.count == 0)
        buffer.append(integer: 12)
        #expect(String(decoding: buffer.bytes, as: UTF8.self) == "12")
    }
}
