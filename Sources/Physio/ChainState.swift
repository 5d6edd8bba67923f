/// What ``IBIEngine`` knows about the end of its beat chain: enough to put the chain back as it was before its latest
/// beat joined, when a later pulse shows that beat was not the beat.
struct ChainState: Sendable {
    /// Foot time of the chain's last beat.
    var footTime: Double
    /// Whether that beat's pulse was clean.
    var pulseOK: Bool
    /// The latest emitted interval, as the regularity check reads it.
    var previousClean: Double?
    /// The latest interval between two clean pulses.
    var previousPair: Double?
    /// Consecutive intervals that passed every check.
    var cleanRun: Int
}
