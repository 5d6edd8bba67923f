/// The median of the last few values, in fixed memory.
///
/// Medians, not means, keep the engine's references (typical interval, typical pulse amplitude) steady when an
/// artefact slips one wild value in.
struct RecentMedian: Sendable {
    private var ring: FixedRing<Double>
    private var scratch: [Double]

    /// - Parameter window: how many recent values the median covers (rounded up to a power of two).
    init(window: Int) {
        self.ring = FixedRing(minimumCapacity: window, filler: 0)
        self.scratch = [Double](repeating: 0, count: self.ring.capacity)
    }

    /// Number of values the median currently covers.
    var count: Int { self.ring.count }

    mutating func append(_ value: Double) {
        self.ring.append(value)
    }

    mutating func removeAll() {
        self.ring.removeAll()
    }

    /// The median, or `nil` with fewer than `minimumCount` values.
    ///
    /// - Complexity: O(w²) for window w by insertion sort into preallocated scratch; w is 8 here.
    mutating func median(minimumCount: Int = 1) -> Double? {
        let n = self.ring.count
        guard n >= max(minimumCount, 1) else { return nil }
        for i in 0..<n {
            let value = self.ring[back: i]
            var j = i
            while j > 0 && self.scratch[j - 1] > value {
                self.scratch[j] = self.scratch[j - 1]
                j -= 1
            }
            self.scratch[j] = value
        }
        return n % 2 == 1 ? self.scratch[n / 2] : 0.5 * (self.scratch[n / 2 - 1] + self.scratch[n / 2])
    }
}
