/// Why a detected beat's interval was withheld. The engine prefers silence to a wrong interval (SPEC §9).
public enum BeatSuppression: Sendable, Equatable {
    /// Within the warm-up period after start or reset, or while the signal settles after a gap or an interruption.
    case warmingUp
    /// The first beat after start, reset or a gap: there is no previous beat to measure from.
    case noPreviousBeat
    /// The accelerometer showed strong motion (``IBIConfiguration/motionThreshold``) around the interval, and no run
    /// of clean intervals confirmed it within the latency budget (as ``unconfirmed``, for strong motion).
    case motion
    /// The interval lies outside the plausible range.
    case implausible
    /// The interval differs too much from recent ones (a missed or extra beat).
    case irregular
    /// One of the two pulses is unlike recent pulses: its shape does not match their template, its amplitude is
    /// out of their range, or the next upstroke came before its shape could be seen.
    case pulseShape
    /// While the wrist moves: the interval passed every check, but no run of clean intervals confirmed it within the
    /// latency budget.
    case unconfirmed
    /// While the wrist moves periodically (walking, running), the interval's rate lies on the accelerometer's cadence
    /// or one of its harmonics: the arm swing's artefact is as periodic as a pulse and, shaped like one, passes every
    /// other check (off the wrist it is all the PPG shows), so such an interval is no evidence of a beat.
    case cadence
    /// At rest, the PPG showed no pulse (``PulsePresence``): its slope has not repeated itself at the rhythm's interval
    /// for 15 s, as sensor noise without skin contact does not, whose upstrokes can pass every other check.
    case noPulse
}
