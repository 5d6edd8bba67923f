/// A beat confirmed by ``IBIEngine``: its diastolic foot, and the interval that ends there when it passed every
/// check.
public struct DetectedBeat: Sendable, Equatable {
    /// Time of the pulse's foot (the BVP trough before the systolic upstroke), seconds since 1970: the fiducial
    /// Empatica's IBIs use.
    public var time: Double
    /// The inter-beat interval ending at this beat in seconds, or `nil` when it was withheld.
    public var interval: Double?
    /// Why the interval was withheld; `nil` when it was emitted.
    public var suppression: BeatSuppression?
    /// Correlation of the pulse's shape with the template of recent pulses (1 = identical shape), or `nil` while
    /// the template is learning or when the next upstroke came before the pulse's shape window ended.
    public var templateCorrelation: Double?

    public init(time: Double, interval: Double?, suppression: BeatSuppression?, templateCorrelation: Double? = nil) {
        self.time = time
        self.interval = interval
        self.suppression = suppression
        self.templateCorrelation = templateCorrelation
    }
}
