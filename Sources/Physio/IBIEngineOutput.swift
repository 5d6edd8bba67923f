/// What one BVP sample produced: at most one confirmed beat and at most one heart-rate tick. A plain value, so the
/// per-sample path hands results back without allocating.
public struct IBIEngineOutput: Sendable, Equatable {
    /// A beat confirmed by this sample, with or without an interval.
    public var beat: DetectedBeat?
    /// A heart-rate value when this sample crossed a whole second and enough valid intervals were recent.
    public var heartRate: HeartRateSample?

    /// The sample that produced this output after accelerometer-referenced artefact reduction
    /// (``MotionArtefactFilter``); `nil` when the sample was not taken (not finite, out of order).
    public var filteredBVP: Double?

    public init(beat: DetectedBeat? = nil, heartRate: HeartRateSample? = nil, filteredBVP: Double? = nil) {
        self.beat = beat
        self.heartRate = heartRate
        self.filteredBVP = filteredBVP
    }

    /// The emitted inter-beat interval (`didReceiveIBI`, MQTT `ibi`): the beat's time and the interval in seconds.
    public var interval: (time: Double, seconds: Double)? {
        guard let beat = self.beat, let seconds = beat.interval else { return nil }
        return (beat.time, seconds)
    }
}
