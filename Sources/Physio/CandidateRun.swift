/// The run of seconds one spectral peak has been the best candidate, which acquisition (and take-over of the track)
/// in ``SpectralHeartRate`` waits on: a pulse stays, a peak of noise lasts about one window.
///
/// A run goes on while each second's best candidate lies within ±5 bpm of the last. It is judged two ways:
/// ``SpectralHeartRate/acquisitionTicks`` seconds at concentration ≥ ``SpectralHeartRate/acceptance`` every one of
/// them (since the run began or went on after a gap), or ``SpectralHeartRate/persistenceTicks`` seconds at all.
/// One second in which no candidate passes does not end a run of two seconds or more (``gapAllowance``): that second
/// is not counted, the run goes on within ±5 bpm of where it was, and the strong count starts over. Without it a
/// pulse whose concentration dipped below the bar for a single second — common in running, where residue the
/// accelerometer does not explain comes and goes — waited another 12 s (issue 18, round 20, Docs/ibi.md). A second
/// in which another peak is the best still starts the run over: waiting through it chained bursts of noise at
/// nearby rates into a track. Fixed memory.
struct CandidateRun: Sendable {
    /// Seconds without a passing candidate a run may miss in a row without ending.
    static let gapAllowance = 1
    /// Largest move, bpm, from one second's best candidate to the next within a run.
    static let reach = 5.0

    /// Where the run is, bpm; nil when there is none.
    private(set) var bpm: Double?
    /// Seconds counted in the run.
    private(set) var ticks = 0
    /// Seconds since the run began or went on after a gap, while every one has been strong; it stops counting at
    /// the first that has not (``weakened``).
    private var strong = 0
    private var weakened = false
    /// Seconds missed in a row.
    private var gap = 0

    /// Ends the run.
    mutating func end() {
        self.bpm = nil
        self.ticks = 0
        self.strong = 0
        self.weakened = false
        self.gap = 0
    }

    /// A second in which no candidate passes: the run waits for ``gapAllowance`` such seconds, then ends.
    mutating func skip() {
        guard self.bpm != nil, self.ticks >= 2, self.gap < Self.gapAllowance else {
            self.end()
            return
        }
        self.gap += 1
        self.strong = 0
        self.weakened = false
    }

    /// This second's best candidate at `bpm` with `concentration`; true once the run is long enough to be taken.
    mutating func hold(_ bpm: Double, concentration: Double) -> Bool {
        if let previous = self.bpm, abs(previous - bpm) <= Self.reach {
            self.ticks += 1
        } else {
            self.start()
        }
        self.gap = 0
        self.bpm = bpm
        if concentration >= SpectralHeartRate.acceptance, !self.weakened {
            self.strong += 1
        } else {
            self.weakened = true
        }
        return self.strong >= SpectralHeartRate.acquisitionTicks || self.ticks >= SpectralHeartRate.persistenceTicks
    }

    private mutating func start() {
        self.ticks = 1
        self.strong = 0
        self.weakened = false
    }
}
