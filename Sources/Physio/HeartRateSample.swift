/// Heart rate published at 1 Hz: from recent clean intervals where there are enough, from the BVP spectrum through
/// motion otherwise.
public struct HeartRateSample: Sendable, Equatable {
    /// The whole second (seconds since 1970) this value is for.
    public var time: Double
    /// Beats per minute.
    public var beatsPerMinute: Double
    /// How far the value can be trusted, 0…1: 1 for a value from clean beats; for a spectral value the share of the
    /// pulse band's non-motion power that lies at the chosen peak, scaled (see ``SpectralHeartRate``), lowered while
    /// the peak sits on an accelerometer frequency.
    public var confidence: Double
    /// Beats or spectrum.
    public var source: HeartRateSource

    public init(time: Double, beatsPerMinute: Double, confidence: Double = 1, source: HeartRateSource = .beats) {
        self.time = time
        self.beatsPerMinute = beatsPerMinute
        self.confidence = confidence
        self.source = source
    }
}
