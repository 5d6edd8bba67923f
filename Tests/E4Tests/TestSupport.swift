import E4

/// SplitMix64: a tiny deterministic generator, so random tests reproduce from their seed without Foundation.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        self.state = seed
    }

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func bytes(count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &self) }
    }
}

/// The decoders' error, or nil when the call returned.
func decodeError<T>(_ body: () throws(E4DecodeError) -> T) -> E4DecodeError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}

extension Array where Element == UInt8 {
    /// `[UInt8]` of an encoded packet.
    init(_ packet: E4PacketBytes) {
        self = packet.withUnsafeBytes { Array($0) }
    }
}

extension InlineArray {
    /// The elements as an array, for `#expect` comparisons.
    var array: [Element] {
        var result: [Element] = []
        for index in self.indices { result.append(self[index]) }
        return result
    }
}

/// Packet storage from an array literal (tests only).
func inline11(_ values: [Int]) -> InlineArray<11, Int> {
    var result = InlineArray<11, Int>(repeating: 0)
    for index in 0..<min(11, values.count) { result[index] = values[index] }
    return result
}
