/// A running template of recent pulse shapes and the correlation of a new pulse with it.
///
/// Amplitude alone says little about a pulse: real pulses swell and shrink with breathing and vasomotion, while a
/// motion artefact or a dicrotic wave can have any amplitude. The shape of the first part of a pulse — upstroke,
/// systolic peak, start of the decline — is stable from beat to beat in one person and one sensor position, and an
/// artefact rarely reproduces it. Each pulse is resampled, over a window centred on its steepest upstroke that
/// spans a fixed fraction of the typical interval, onto ``points`` samples, so the same template serves 40 and
/// 200 bpm; it is centred and scaled to unit norm, so amplitude and offset do not matter, and compared with the
/// template by the Pearson correlation.
///
/// Memory is fixed at `init` (three arrays of ``points`` values); nothing allocates afterwards.
struct PulseTemplate: Sendable {
    /// Resampled points per pulse: enough for the upstroke and peak at any rate, cheap enough per beat.
    static let points = 16

    /// The mean normalised shape of recently accepted pulses.
    private var template: [Double]
    /// The latest pulse's normalised shape, kept for ``learnLatest()``.
    private var latest: [Double]
    /// Number of pulses the template has learned since it was (re)started, saturating at ``settledCount``.
    private(set) var learned = 0
    /// Consecutive pulses that did not match; many in a row mean the shape really changed (sensor moved).
    private var misses = 0

    /// Pulses averaged before the template is trusted.
    static let settledCount = 4
    /// Consecutive mismatches after which the template starts over from the next pulses.
    static let relearnAfter = 12

    init() {
        self.template = [Double](repeating: 0, count: Self.points)
        self.latest = [Double](repeating: 0, count: Self.points)
    }

    /// Whether enough pulses have been seen for ``correlate(_:from:through:)`` to mean something.
    var isSettled: Bool { self.learned >= Self.settledCount }

    mutating func reset() {
        self.learned = 0
        self.misses = 0
    }

    /// Resamples `ring` between absolute indices `first` and `last` (inclusive) and correlates it with the
    /// template; the shape is remembered for ``learnLatest()``.
    ///
    /// - Returns: the correlation in [−1, 1], or `nil` when the template is not settled yet or the pulse is flat.
    mutating func correlate(_ ring: FixedRing<Double>, from first: Int, through last: Int) -> Double? {
        let span = Double(last - first)
        guard span >= 1 else { return nil }
        var mean = 0.0
        for k in 0..<Self.points {
            let position = Double(first) + span * Double(k) / Double(Self.points - 1)
            let lower = Int(position.rounded(.down))
            let upper = min(lower + 1, last)
            let weight = position - Double(lower)
            let value = (1 - weight) * ring[absolute: lower] + weight * ring[absolute: upper]
            self.latest[k] = value
            mean += value
        }
        mean /= Double(Self.points)
        var norm = 0.0
        for k in 0..<Self.points {
            self.latest[k] -= mean
            norm += self.latest[k] * self.latest[k]
        }
        guard norm > 0 else { return nil }
        let scale = 1 / norm.squareRoot()
        for k in 0..<Self.points { self.latest[k] *= scale }
        guard self.isSettled else { return nil }
        var dot = 0.0
        var templateNorm = 0.0
        for k in 0..<Self.points {
            dot += self.template[k] * self.latest[k]
            templateNorm += self.template[k] * self.template[k]
        }
        guard templateNorm > 0 else { return nil }
        return dot / templateNorm.squareRoot()
    }

    /// Folds the latest pulse into the template: an equal-weight mean while settling, then an exponential mean
    /// over roughly the last eight pulses so slow changes of shape are followed.
    mutating func learnLatest() {
        self.misses = 0
        let weight = self.learned < Self.settledCount ? 1 / Double(self.learned + 1) : 0.125
        for k in 0..<Self.points {
            self.template[k] += weight * (self.latest[k] - self.template[k])
        }
        self.learned = min(self.learned + 1, Self.settledCount)
    }

    /// Records that the latest pulse did not match; after ``relearnAfter`` in a row the template starts over.
    mutating func missLatest() {
        self.misses += 1
        if self.misses >= Self.relearnAfter {
            self.learned = 0
            self.misses = 0
        }
    }
}
