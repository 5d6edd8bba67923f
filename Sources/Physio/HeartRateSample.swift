/// Heart rate published at 1 Hz from recent valid intervals.
public struct HeartRateSample: Sendable, Equatable {
    /// The whole second (seconds since 1970) this value is for.
    public var time: Double
    /// Beats per minute: 60 / mean of the valid intervals that ended in the preceding window.
    public var beatsPerMinute: Double

    public init(time: Double, beatsPerMinute: Double) {
        self.time = time
        self.beatsPerMinute = beatsPerMinute
    }
}
