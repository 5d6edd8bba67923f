/// Tracks accelerometer motion and remembers when it last exceeded the threshold.
///
/// The motion index is the root of the summed per-axis variances over a short window, in g — the same quantity
/// the benchmark's scorer uses to split still from motion time, so gating and scoring speak one language.
struct MotionGate: Sendable {
    private var samples: FixedRing<SIMD4<Double>>
    private let window: Int
    private let countsPerG: Double
    private let thresholdSquared: Double
    private let mildThresholdSquared: Double
    private let movementThresholdSquared: Double
    private var sum = SIMD4<Double>()
    private var sumOfSquares = SIMD4<Double>()
    /// Time of the latest ACC sample whose window exceeded the threshold; `-infinity` when none since reset.
    private(set) var lastMotion = -Double.infinity
    /// Time of the latest ACC sample whose window exceeded the mild-motion threshold.
    private(set) var lastMildMotion = -Double.infinity
    /// Time of the latest ACC sample whose window exceeded the movement threshold (the wrist moved at all).
    private(set) var lastMovement = -Double.infinity

    init(configuration: IBIConfiguration) {
        self.window = max(4, Int((configuration.motionWindow * configuration.accRate).rounded()))
        self.samples = FixedRing(minimumCapacity: self.window, filler: SIMD4<Double>())
        self.countsPerG = configuration.accCountsPerG > 0 ? configuration.accCountsPerG : 64
        self.thresholdSquared = configuration.motionThreshold * configuration.motionThreshold
        self.mildThresholdSquared = configuration.mildMotionThreshold * configuration.mildMotionThreshold
        self.movementThresholdSquared = configuration.movementThreshold * configuration.movementThreshold
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
        if total > self.movementThresholdSquared {
            self.lastMovement = time
        }
    }

    mutating func reset() {
        self.samples.removeAll()
        self.sum = SIMD4<Double>()
        self.sumOfSquares = SIMD4<Double>()
        self.lastMotion = -Double.infinity
        self.lastMildMotion = -Double.infinity
        self.lastMovement = -Double.infinity
    }
}
