/// Tracks accelerometer motion and remembers when it last exceeded the threshold.
///
/// The motion index is the root of the summed per-axis variances over a short window, in g — the same quantity
/// the benchmark's scorer uses to split still from motion time, so gating and scoring speak one language.
struct MotionGate: Sendable {
    private var samples: FixedRing<SIMD4<Double>>
    private let window: Int
    private let rate: Double
    private let countsPerG: Double
    private let thresholdSquared: Double
    private let mildThresholdSquared: Double
    private var sum = SIMD4<Double>()
    private var sumOfSquares = SIMD4<Double>()
    /// Time of the latest ACC sample whose window exceeded the threshold; `-infinity` when none since reset.
    private(set) var lastMotion = -Double.infinity
    /// Time of the latest ACC sample whose window exceeded the mild-motion threshold.
    private(set) var lastMildMotion = -Double.infinity

    init(configuration: IBIConfiguration) {
        self.window = max(4, Int((configuration.motionWindow * configuration.accRate).rounded()))
        self.rate = configuration.accRate > 0 ? configuration.accRate : 32
        // Enough history for the periodicity check: its window plus the longest plausible interval as lag.
        let history = Int(((Self.periodicityWindow + configuration.maximumInterval) * self.rate).rounded()) + 1
        self.samples = FixedRing(minimumCapacity: max(self.window, history), filler: SIMD4<Double>())
        self.countsPerG = configuration.accCountsPerG > 0 ? configuration.accCountsPerG : 64
        self.thresholdSquared = configuration.motionThreshold * configuration.motionThreshold
        self.mildThresholdSquared = configuration.mildMotionThreshold * configuration.mildMotionThreshold
    }

    /// Adds one ACC sample (device counts).
    mutating func append(x: Double, y: Double, z: Double, at time: Double) {
        let value = SIMD4<Double>(x, y, z, 0) / self.countsPerG
        if self.samples.count >= self.window {
            let leaving = self.samples[back: self.window - 1]
            self.sum -= leaving
            self.sumOfSquares -= leaving * leaving
        }
        self.samples.append(value)
        self.sum += value
        self.sumOfSquares += value * value
        let n = Double(min(self.samples.count, self.window))
        guard n >= Double(self.window / 2) else { return }
        let mean = self.sum / n
        let variance = self.sumOfSquares / n - mean * mean
        let total = max(variance.x, 0) + max(variance.y, 0) + max(variance.z, 0)
        if total > self.thresholdSquared {
            self.lastMotion = time
        }
        if total > self.mildThresholdSquared {
            self.lastMildMotion = time
        }
    }

    /// Seconds of ACC over which ``periodicity(lag:)`` correlates the arm's movement with itself.
    static let periodicityWindow = 2.0

    /// How strongly the arm's movement over the last ``periodicityWindow`` repeats after `lag` seconds: the
    /// normalised autocorrelation of the three axes (means removed), in [−1, 1]; 0 without enough history.
    ///
    /// A periodic movement (arm swing, tapping) adds a periodic artefact to the PPG, and a detector can lock onto
    /// it: pulses that come at the arm's period in motion are not trusted.
    /// - Complexity: O(window) with no allocation; called once per beat.
    func periodicity(lag: Double) -> Double {
        let n = Int((Self.periodicityWindow * self.rate).rounded())
        let shift = Int((lag * self.rate).rounded())
        guard shift > 0, n > 2, n + shift <= self.samples.count else { return 0 }
        var meanNow = SIMD4<Double>()
        var meanThen = SIMD4<Double>()
        for back in 0..<n {
            meanNow += self.samples[back: back]
            meanThen += self.samples[back: back + shift]
        }
        meanNow /= Double(n)
        meanThen /= Double(n)
        var cross = 0.0
        var powerNow = 0.0
        var powerThen = 0.0
        for back in 0..<n {
            let now = self.samples[back: back] - meanNow
            let then = self.samples[back: back + shift] - meanThen
            cross += (now * then).sum()
            powerNow += (now * now).sum()
            powerThen += (then * then).sum()
        }
        let power = (powerNow * powerThen).squareRoot()
        return power > 0 ? cross / power : 0
    }

    mutating func reset() {
        self.samples.removeAll()
        self.sum = SIMD4<Double>()
        self.sumOfSquares = SIMD4<Double>()
        self.lastMotion = -Double.infinity
        self.lastMildMotion = -Double.infinity
    }
}
