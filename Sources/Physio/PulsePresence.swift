/// Whether the PPG carries a pulse at all: the slope of the low-passed BVP repeats itself at the rhythm's interval.
///
/// A wristband that lies still without skin contact gives a PPG of sensor noise alone. At rest the beat checks are
/// lax on purpose (real pulses change shape with breathing and contact pressure), and the upstrokes of low-passed
/// noise come at intervals regular enough to pass them: about 30 intervals a minute came out of noise
/// (`bench/ibi/nocontact.py`). A pulse train's slope correlates with itself one interval later; noise does not.
///
/// Once a second (``update(at:interval:)``): the normalised autocorrelation of the last 8 s of slope (mean removed,
/// scaled for the overlap), its largest value over lags within ±15 % of the rhythm's typical interval (the heart's
/// variability moves the best lag). The pulse is present while that value reached ``threshold`` within the last
/// ``hold`` seconds. What was chosen on which data (Docs/ibi.md, round 16): on 300 s of uniform noise,
/// seeds 1–8, the largest value was 0.28; on the five E4 sets the value passed 0.3 within 15 s in 98.8–100 % of
/// the seconds where Empatica emitted beats. Memory is fixed at `init`; nothing allocates.
struct PulsePresence: Sendable {
    /// Correlation a pulse train's slope reaches with itself one interval later.
    static let threshold = 0.3
    /// Seconds a passing value counts for: real pulses dip below the threshold for a few seconds at a time (a
    /// breath, a change of contact pressure); noise, on the 8 seeds, never reached it.
    static let hold = 15.0
    /// Analysis window, seconds.
    static let windowSeconds = 8.0
    /// Lags searched, as a share of the interval either side.
    static let lagBand = 0.15

    private var slopes: FixedRing<Double>
    private let size: Int
    private let rate: Double
    /// The last second whose value passed ``threshold``.
    private var lastPresent: Double?

    /// - Parameter rate: BVP sample rate, Hz.
    init(rate: Double) {
        self.rate = rate > 0 ? rate : 64
        self.size = Int(Self.windowSeconds * self.rate)
        self.slopes = FixedRing(minimumCapacity: self.size, filler: 0)
    }

    /// Adds one slope sample (the engine's low-passed BVP, first-differenced).
    mutating func append(_ slope: Double) {
        self.slopes.append(slope.isFinite ? slope : 0)
    }

    /// Judges the last 8 s against the rhythm's typical `interval` (seconds); nothing to judge without one, or
    /// before 8 s of signal. A window the wrist moved in (`still` false) cannot be judged — the motion reshapes the
    /// slope — and counts as a pulse: the engine's rules for motion apply there, and a pulse returning to rest is not
    /// withheld for the seconds its window still holds the motion.
    mutating func update(at second: Double, interval: Double?, still: Bool) {
        guard still else {
            self.lastPresent = second
            return
        }
        guard let interval, interval > 0, interval.isFinite, self.slopes.count >= self.size,
              let value = self.correlation(period: interval) else { return }
        if value >= Self.threshold { self.lastPresent = second }
    }

    /// Whether a pulse was seen within ``hold`` seconds of `time`.
    func isPresent(at time: Double) -> Bool {
        guard let last = self.lastPresent else { return false }
        return time - last <= Self.hold
    }

    /// The largest normalised autocorrelation of the window over lags within ±``lagBand`` of `period` seconds; nil
    /// when the window is flat or the lags do not fit it.
    func correlation(period: Double) -> Double? {
        let n = self.size
        var mean = 0.0
        for back in 0..<n { mean += self.slopes[back: back] }
        mean /= Double(n)
        var energy = 0.0
        for back in 0..<n {
            let v = self.slopes[back: back] - mean
            energy += v * v
        }
        guard energy > 0, energy.isFinite else { return nil }
        let low = max(1, Int((period * (1 - Self.lagBand) * self.rate).rounded(.down)))
        let high = min(n / 2, Int((period * (1 + Self.lagBand) * self.rate).rounded(.up)))
        guard low <= high else { return nil }
        var best: Double?
        for lag in low...high {
            var sum = 0.0
            for back in 0..<(n - lag) {
                sum += (self.slopes[back: back] - mean) * (self.slopes[back: back + lag] - mean)
            }
            let value = sum / energy * Double(n) / Double(n - lag)
            if value > (best ?? -.infinity) { best = value }
        }
        return best
    }

    /// Forgets the signal, not the verdict: after a gap the pulse that was there is taken to be there still, until
    /// 8 s of new signal say otherwise (the warm-up after a gap withholds intervals meanwhile).
    mutating func gap() {
        self.slopes.removeAll()
    }

    /// Forgets the signal and the verdict, as after a reconnect.
    mutating func reset() {
        self.slopes.removeAll()
        self.lastPresent = nil
    }
}
