#if canImport(Glibc)
import Glibc
#endif

/// A small, fast, deterministic generator (SplitMix64): the same seed gives the same sequence on every machine,
/// which is what makes a simulated recording reproducible from `--seed`.
///
/// Each independent process of the physiology (beats, motion, EDA responses, tags) draws from its own stream,
/// so adding a draw to one never shifts another.
struct SimRandom: RandomNumberGenerator {
    private(set) var state: UInt64

    init(seed: UInt64) {
        self.state = seed
    }

    /// A stream derived from a seed and labels (device index, process), decorrelated by mixing.
    init(seed: UInt64, _ labels: UInt64...) {
        var state = SimRandom.mix(seed)
        for label in labels {
            state = SimRandom.mix(state ^ SimRandom.mix(label &+ 0x9E37_79B9_7F4A_7C15))
        }
        self.state = state
    }

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        return SimRandom.mix(self.state)
    }

    /// Uniform in [0, 1).
    mutating func unit() -> Double {
        Double(self.next() >> 11) * 0x1.0p-53
    }

    /// Uniform in `range`.
    mutating func uniform(_ range: ClosedRange<Double>) -> Double {
        range.lowerBound + (range.upperBound - range.lowerBound) * self.unit()
    }

    /// Approximately standard normal (Irwin–Hall with four terms, rescaled): cheap and bounded (±3.46).
    mutating func gaussian() -> Double {
        let sum = self.unit() + self.unit() + self.unit() + self.unit()
        return (sum - 2) * 1.7320508075688772
    }

    /// Exponentially distributed with the given mean.
    mutating func exponential(mean: Double) -> Double {
        -mean * log1p(-self.unit())
    }

    /// The SplitMix64 finaliser.
    static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Noise for sample `index` of a stream keyed by `key`: a pure function, so a sample's value does not depend
    /// on which samples were generated before it (clients may start streaming at any time).
    static func noise(key: UInt64, index: Int) -> Double {
        var generator = SimRandom(seed: key ^ SimRandom.mix(UInt64(bitPattern: Int64(index))))
        return generator.gaussian()
    }
}
