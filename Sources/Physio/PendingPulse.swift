/// A pulse whose foot and amplitude are known, waiting until its shape window has been sampled to be judged.
struct PendingPulse: Sendable {
    /// Absolute sample index of the foot in the engine's BVP ring.
    var footIndex: Int
    /// Time of the foot, seconds since 1970.
    var footTime: Double
    /// Seconds from the foot to the steepest upstroke.
    var rise: Double
    /// Peak minus foot, in BVP units.
    var amplitude: Double
    /// Absolute sample index of the shape window's first sample.
    var windowStart: Int
    /// Absolute sample index of the shape window's last sample.
    var windowEnd: Int
}
