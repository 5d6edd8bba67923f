/// Heart rate at 1 Hz from the valid intervals of the last few seconds.
struct HeartRateTracker: Sendable {
    /// (end time, interval) of recently emitted intervals; 64 covers 10 s even at 200 bpm.
    private var recent: FixedRing<SIMD2<Double>>
    private let window: Double

    init(window: Double) {
        self.window = window
        self.recent = FixedRing(minimumCapacity: 64, filler: SIMD2<Double>())
    }

    mutating func append(interval: Double, endingAt time: Double) {
        self.recent.append(SIMD2(time, interval))
    }

    mutating func reset() {
        self.recent.removeAll()
    }

    /// Seconds from the end of the newest interval that ended by `time` to `time`, or `nil` when there is none.
    func ageOfNewest(at time: Double) -> Double? {
        for back in 0..<self.recent.count {
            let end = self.recent[back: back].x
            if end <= time { return time - end }
        }
        return nil
    }

    /// 60 / mean of the intervals that ended in (`time` − window, `time`], or `nil` when they cover less than half
    /// the window (too little evidence to publish a rate).
    func heartRate(at time: Double) -> Double? {
        var sum = 0.0
        var count = 0
        for back in 0..<self.recent.count {
            let entry = self.recent[back: back]
            if entry.x > time { continue }
            if entry.x <= time - self.window { break }
            sum += entry.y
            count += 1
        }
        guard count > 0, sum >= 0.5 * self.window else { return nil }
        return 60 * Double(count) / sum
    }
}
