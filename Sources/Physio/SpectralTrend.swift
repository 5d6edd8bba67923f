/// The spectral heart rate as published: the estimator's values smoothed by level and trend (Holt's linear method,
/// an α-β tracker) and carried from the window's centre to the second the value is for.
///
/// An 8 s window reports the rate at its centre, 4 s before its end; a value is for the second
/// ``IBIEngine/heartRateDelay`` (3 s) before its end, so it is carried 1 s along the trend. The newest window's
/// peak (round 9) moves by a bpm or two from second to second when nothing has changed. The level takes half of each
/// new value (``levelGain``); the trend, in bpm a second, a twentieth of each change of the level (``trendGain``:
/// ≈ 20 s to follow a new slope, so one noisy second barely moves it); what is published is the level plus the
/// trend times ``lookAhead``. Every value updates it, beat-derived ones too (they are published as
/// they are), so a run starts from the beats' rate; a hole of more than ``maximumGap`` seconds starts it over.
/// Fixed memory, no allocation.
struct SpectralTrend: Sendable {
    static let levelGain = 0.5
    static let trendGain = 0.05
    /// Seconds ahead the published value is carried: from the window's centre to the second the value is for
    /// (``IBIEngine/heartRateDelay`` before the window's end).
    static let lookAhead = SpectralHeartRate.windowSeconds / 2 - IBIEngine.heartRateDelay
    /// Largest trend, bpm a second (a heart at a run's onset rises ≈ 2 bpm a second).
    static let maximumTrend = 3.0
    /// Seconds without a value after which the level and trend start over.
    static let maximumGap = 2.0

    private var level: Double?
    private var trend = 0.0
    private var time = 0.0

    /// Forgets the level and the trend.
    mutating func reset() {
        self.level = nil
        self.trend = 0
    }

    /// Takes the value published for `second` (beat-derived or spectral) and returns what to publish for a spectral
    /// one: the updated level carried ``lookAhead`` seconds along the trend, within the estimator's range.
    mutating func update(_ value: Double, at second: Double) -> Double {
        guard value.isFinite, second.isFinite else { return value }
        let elapsed = second - self.time
        if let level = self.level, elapsed > 0, elapsed <= Self.maximumGap {
            let predicted = level + self.trend * elapsed
            let next = predicted + Self.levelGain * (value - predicted)
            let slope = (next - level) / elapsed
            self.trend += Self.trendGain * (slope - self.trend)
            self.trend = min(max(self.trend, -Self.maximumTrend), Self.maximumTrend)
            self.level = next
        } else {
            self.level = value
            self.trend = 0
        }
        self.time = second
        let ahead = (self.level ?? value) + Self.lookAhead * self.trend
        return min(max(ahead, Double(SpectralHeartRate.lowestBPM)), Double(SpectralHeartRate.highestBPM))
    }
}
