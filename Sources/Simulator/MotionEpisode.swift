/// A period of arm movement: it shows in ACC and corrupts the PPG (SPEC §13).
struct MotionEpisode: Sendable {
    var start: Double
    var end: Double
    /// Peak acceleration amplitude, g.
    var amplitude: Double
    /// Movement frequency, Hz.
    var frequency: Double
    var phase: Double
}
