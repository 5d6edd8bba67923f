/// Settings of ``IBIEngine``. The defaults suit an Empatica E4 (BVP 64 Hz, ACC 32 Hz at 64 counts per g) and any
/// adult heart rate from 30 to 200 bpm; nothing here is tuned to one recording.
public struct IBIConfiguration: Sendable, Equatable {
    /// BVP sample rate in Hz.
    public var bvpRate: Double = 64
    /// ACC sample rate in Hz.
    public var accRate: Double = 32
    /// ACC counts per g (E4: 64, ±2 g range).
    public var accCountsPerG: Double = 64
    /// No IBI is emitted during this many seconds after start or ``IBIEngine/reset()``: the detector's levels
    /// and the interval history settle first (EmpaLink: "an initialization period of about 20 seconds").
    public var warmUp: Double = 20
    /// Shortest plausible interval in seconds: 214 bpm, which leaves room for beat-to-beat variability at 200 bpm.
    public var minimumInterval: Double = 0.28
    /// Longest plausible interval in seconds (30 bpm).
    public var maximumInterval: Double = 2.0
    /// Largest relative difference between an interval and the median of recent intervals (and the previous emitted
    /// one) before it is called irregular and withheld. It sits just below the smallest change a detector error makes —
    /// a missed beat doubles the interval, an extra pulse at the dicrotic wave (a third of the way) shortens it by a
    /// third — and above what the heart does from one beat to the next (a breath, a vagal pause: 20–30 %).
    public var maximumRelativeChange: Double = 0.3
    /// Smallest pulse amplitude accepted, relative to the median of recent pulses.
    public var minimumAmplitudeRatio: Double = 0.25
    /// Largest pulse amplitude accepted, relative to the median of recent pulses.
    public var maximumAmplitudeRatio: Double = 4.0
    /// Smallest correlation of a pulse's shape with the template of recent pulses for it to count as a clean
    /// pulse at rest (see ``IBIEngine``): only a pulse essentially unlike recent ones (the template explains less
    /// than a tenth of its variance) is rejected, because at rest breathing, vasomotion and contact pressure reshape
    /// real pulses and the interval checks catch what is not a beat. While the wrist moves
    /// ``confirmingCorrelation`` applies.
    public var minimumTemplateCorrelation: Double = 0.3
    /// ACC motion index (g, root of the summed per-axis variances over ``motionWindow``) above which the motion is
    /// strong: the pulse template stops learning, no missed beat is sought, and an interval is emitted only in a
    /// confirmed run (withheld as ``BeatSuppression/motion`` otherwise).
    public var motionThreshold: Double = 0.5
    /// ACC motion index (g) above which the arm is moving a little: beats are still measured, but only the
    /// cleanest ones are emitted (tolerances scaled by ``mildMotionStrictness``), because that is when a
    /// distorted pulse most often passes for a real one.
    public var mildMotionThreshold: Double = 0.1
    /// While the wrist moves (``movementThreshold``), an interval is emitted only in a run of this many consecutive
    /// intervals that passed every check: the first ones of a run are held until the run is confirmed, and withheld
    /// (``BeatSuppression/unconfirmed``, or ``BeatSuppression/motion`` in strong motion) if it is not confirmed within
    /// ``maximumLatency``.
    public var motionConfirmations = 4
    /// ACC motion index (g) above which the wrist is moving, if slowly: intervals are emitted only in confirmed runs
    /// (``motionConfirmations``) and pulse amplitudes must be in the band of recent ones. At rest the E4's index stays
    /// near 0.01–0.02 g (one count is 0.016 g); a wrist that turns or drifts reaches a few hundredths, and its PPG
    /// can then show pulse-like artefacts that pass every single-pulse check.
    public var movementThreshold: Double = 0.06
    /// An interval further than ``maximumRelativeChange`` from the median of recent intervals is still regular when
    /// it is within ``maximumRelativeChange`` of the previous interval between clean pulses and within this
    /// fraction of the median: a rhythm that slows or speeds up beat by beat.
    public var maximumRhythmShift: Double = 0.4
    /// Longest time (seconds) from a beat's foot to the emission of its interval (SPEC §9: ≤ 1 s). An interval held
    /// for confirmation is emitted when its run is confirmed within this time, withheld otherwise.
    public var maximumLatency: Double = 1.0
    /// Smallest correlation with the template of a pulse that has little else to speak for it: every pulse while the
    /// wrist moves (``movementThreshold``), when an artefact can pass the other checks, and a pulse the detector did
    /// not see but that lies midway between two clean beats (``IBIEngine`` recovers it as a missed beat). At 0.8 the
    /// template explains about three quarters of the pulse's variance (r² = 0.72); the everyday threshold,
    /// ``minimumTemplateCorrelation``, a tenth.
    public var confirmingCorrelation: Double = 0.85
    /// Factor (≤ 1) applied in mild motion to ``maximumRelativeChange``, ``maximumRhythmShift`` and to the distance
    /// of ``minimumTemplateCorrelation`` from 1 (in motion ``confirmingCorrelation`` is the higher bar).
    public var mildMotionStrictness: Double = 0.75
    /// Length of the ACC window for the motion index, in seconds.
    public var motionWindow: Double = 1.0
    /// After motion, beats stay suppressed for this long (the PPG takes a moment to recover).
    public var motionHoldoff: Double = 0.5
    /// HR averages the valid intervals that ended in this many seconds before each 1 Hz tick (and needs them to
    /// cover half of it). A trailing window reports the rate of its middle, half its length late, while a heart rate
    /// reference is centred on its second (IEEE SPC 2015's 8 s windows, `score_hr.py`): 5 s halves the 10 s window's
    /// lag and still averages 4–8 beats at rest (Docs/ibi.md, *The beat-derived HR's window*).
    public var heartRateWindow: Double = 5
    /// A gap in BVP timestamps longer than this (seconds) restarts the beat chain: no interval spans it.
    public var maximumGap: Double = 0.5
    /// After a gap or ``IBIEngine/interrupt()``, intervals whose first beat lies within this many seconds are
    /// withheld (``BeatSuppression/warmingUp``). A delta-coded stream that lost a packet carries a step of unknown
    /// size, which the decoder's baseline drains with its time constant (E4: 2 s, SPEC §6); until it has gone (three
    /// time constants: less than 5 % left) the slope it leaves shifts the feet, by up to 0.1 s at 4 s on a pulse with
    /// a flat diastole.
    public var settlingAfterGap: Double = 6

    public init() {}
}
