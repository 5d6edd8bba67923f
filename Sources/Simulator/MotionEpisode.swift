/// A period of arm movement: it shows in ACC and corrupts the PPG (SPEC §13).
struct MotionEpisode: Sendable {
    /// What the wearer does.
    enum Kind: Sendable, Equatable {
        /// An arm movement of a few seconds (1–3 Hz, the original episodes).
        case swing
        /// Walking: arm swing at the cadence, 0.35 g, an artefact about the pulse's size, heart rate + 25 bpm.
        case walking
        /// Running: arm swing at the cadence, 1.2 g, an artefact 2–3 × the pulse, heart rate + 70 bpm.
        case running
    }

    var start: Double
    var end: Double
    /// Peak acceleration amplitude, g.
    var amplitude: Double
    /// Movement frequency (the cadence for walking and running), Hz.
    var frequency: Double
    var phase: Double
    var kind: Kind = .swing
    /// PPG artefact amplitude relative to the pulse's (walking and running).
    var artefactRatio = 0.0
    /// Lag of the PPG artefact's fundamental, second and third harmonic behind the ACC, radians.
    var lags = SIMD3<Double>()

    /// Heart-rate rise the effort leads to, bpm (approached with a 30 s time constant, lost with 45 s after the end).
    var effort: Double {
        switch self.kind {
        case .swing: 0
        case .walking: 25
        case .running: 70
        }
    }

    /// 0 → 1 over the first 2 s and back over the last 2 s (getting going, stopping).
    func ramp(at t: Double) -> Double {
        min(max(min(t - self.start, self.end - t) / 2, 0), 1)
    }
}
