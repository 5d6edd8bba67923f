/// The streaming inter-beat-interval engine: a causal beat detector on BVP, gated by accelerometer motion and a
/// beat quality check, that emits each interval as soon as its ending beat is confirmed (SPEC §9).
///
/// The fiducial is the pulse's foot — the BVP trough before the systolic upstroke — which is where Empatica's own
/// IBIs sit, so intervals are comparable with theirs. Detection follows the upstroke: the slope of a low-passed
/// BVP crossing an adaptive fraction of recent upstroke slopes marks a pulse; when the slope turns negative (the
/// systolic peak) the pulse's foot is the lowest raw sample just before the upstroke, and the pulse is judged once
/// a short window around its upstroke has been sampled (≈ 0.1–0.3 s later). A pulse is clean when its shape
/// correlates with a running template of recent clean pulses, its amplitude is in their range and its foot sits
/// their usual time before the upstroke. An interval is emitted only when it is plausible, close to recent
/// intervals and to the previous clean one, both pulses are clean, the accelerometer was quiet (in mild motion: a
/// few clean intervals in a row), and the warm-up is over; otherwise the beat is reported with the reason it was
/// withheld. A pulse too early to be the next beat and not shaped like one (a dicrotic wave, a jolt) is not a
/// beat at all; a pulse too small for the detector, midway between two clean beats and shaped like the template, is
/// recovered as the beat it missed.
///
/// BVP polarity: systolic peaks positive (E4 exports and our live BVP, SPEC §6). Amplitude scale does not matter.
/// Memory is fixed at `init`; ``appendBVP(_:at:)`` and ``appendACC(x:y:z:at:)`` never allocate.
///
/// ```swift
/// var engine = IBIEngine()
/// for (value, time) in bvp {
///     let output = engine.appendBVP(value, at: time)
///     if let ibi = output.interval { publish(ibi.time, ibi.seconds) }
///     if let hr = output.heartRate { publish(hr.time, hr.beatsPerMinute) }
/// }
/// ```
public struct IBIEngine: Sendable {
    /// Detector phase between samples.
    enum Phase: Sendable {
        /// Waiting for the slope to cross the threshold.
        case searching
        /// In an upstroke; waiting for the systolic peak.
        case rising
    }

    /// The settings this engine was made with.
    public let configuration: IBIConfiguration

    // Signal history: raw BVP and sample times, a few seconds.
    var raw: FixedRing<Double>
    var times: FixedRing<Double>
    /// Slope of the low-passed BVP per sample, kept as long as `raw` for the missed-beat search.
    var slopes: FixedRing<Double>
    var lowPass: Biquad
    var previousFiltered = 0.0

    // Detector state.
    var phase = Phase.searching
    var slopeLevel = 0.0
    let slopeDecay: Double
    var maximumSlope = 0.0
    var maximumSlopeIndex = 0
    var lastUpstrokeIndex = Int.min / 2
    var lastPeakIndex = Int.min / 2

    // Beat chain and references.
    var intervals: RecentMedian
    var amplitudes: RecentMedian
    /// Foot-to-upstroke times of recent clean pulses.
    var rises: RecentMedian
    /// Median of recent plausible intervals, refreshed when one is added (read every sample by the refractory).
    var typicalInterval: Double?
    var previousFootTime: Double?
    var previousPulseOK = false
    var previousClean: Double?
    /// The latest interval between two clean pulses, emitted or not: a rhythm that changes beat by beat is followed
    /// from it.
    var previousPair: Double?
    /// Consecutive intervals that passed every check (emitted, or held back by
    /// ``IBIConfiguration/motionConfirmations``).
    var cleanRun = 0
    /// The latest pulse, waiting for its shape window.
    var pending: PendingPulse?
    /// Foot time of a clean pulse that came too early to join the chain, until the next pulse is judged.
    var earlyPulse: Double?
    /// The chain as it was before its latest beat joined, for a pulse that takes that beat's place (see
    /// ``IBIEngine/replacesLastBeat(footTime:pulseOK:correlation:)``).
    var chainBeforeLast: ChainState?
    var template: PulseTemplate
    /// Judged beats not yet handed out; intervals held for confirmation wait here.
    var outbox: BeatOutbox

    // Clocks.
    var startTime: Double?
    var lastTime = 0.0
    var lastSecond = 0.0
    /// ``interrupt()`` was called: the next sample starts a new chain.
    var interrupted = false
    /// Intervals that start before this time are withheld while the signal settles after a gap or an interruption.
    var settledAfter = -Double.infinity

    var motion: MotionGate
    var heartRate: HeartRateTracker
    /// Accelerometer-referenced artefact reduction of the BVP (``IBIEngineOutput/filteredBVP``).
    var artefactFilter: MotionArtefactFilter
    /// HR from the artefact-reduced BVP's spectrum, published when clean beats are too few.
    var spectral: SpectralHeartRate
    /// Level and trend of the published rate; spectral values are published through it (``SpectralTrend``).
    var spectralTrend = SpectralTrend()
    /// Whether the PPG carries a pulse at all (no skin contact: sensor noise only).
    var presence: PulsePresence
    /// Seconds since the newest clean interval ended beyond which the beat-derived rate no longer seeds the spectral
    /// track (a beat every ≤ 1.5 s at 40 bpm and above, plus the judgement's wait for the next pulse).
    static let freshBeatAge = 2.0
    /// Seconds between the tick a heart rate is published at and the second it is for (``HeartRateSample/time``).
    /// A value summarises a window that ends at the tick: the beats' intervals that ended in the last
    /// ``IBIConfiguration/heartRateWindow`` (5 s) span about the last 5.5–6 s, centred ≈ 3 s back; the spectral
    /// window (8 s) is centred 4 s back and is carried 1 s along its trend (``SpectralTrend/lookAhead``). Labelled
    /// with the tick instead, every value lags the heart by these 3 s, as a reference on the same window (an ECG's
    /// intervals in 8 s centred on the second, IEEE SPC 2015's and `score_hr.py`'s) sees.
    public static let heartRateDelay = 3.0

    /// - Parameter configuration: sample rates and checks; see ``IBIConfiguration``.
    public init(configuration: IBIConfiguration = IBIConfiguration()) {
        self.configuration = configuration
        let rate = configuration.bvpRate > 0 ? configuration.bvpRate : 64
        let history = Int(4 * rate)
        self.raw = FixedRing(minimumCapacity: history, filler: 0)
        self.times = FixedRing(minimumCapacity: history, filler: 0)
        self.slopes = FixedRing(minimumCapacity: history, filler: 0)
        self.lowPass = Biquad(lowPass: 5, sampleRate: rate)
        // Once beats stop coming, the upstroke level forgets with a 1 s time constant so the detector recovers.
        self.slopeDecay = 1 - 1 / rate
        self.intervals = RecentMedian(window: 8)
        self.amplitudes = RecentMedian(window: 8)
        self.rises = RecentMedian(window: 8)
        self.template = PulseTemplate()
        self.outbox = BeatOutbox(capacity: 16)
        self.motion = MotionGate(configuration: configuration)
        self.heartRate = HeartRateTracker(window: configuration.heartRateWindow)
        self.artefactFilter = MotionArtefactFilter(bvpRate: rate, accRate: configuration.accRate,
                                                   accCountsPerG: configuration.accCountsPerG)
        self.spectral = SpectralHeartRate(bvpRate: rate, accRate: configuration.accRate,
                                          accCountsPerG: configuration.accCountsPerG)
        self.presence = PulsePresence(rate: rate)
    }

    /// Forgets everything, as after a reconnect: the next interval comes after a new warm-up.
    public mutating func reset() {
        self.raw.removeAll()
        self.times.removeAll()
        self.slopes.removeAll()
        self.restartChain()
        self.slopeLevel = 0
        self.intervals.removeAll()
        self.typicalInterval = nil
        self.amplitudes.removeAll()
        self.rises.removeAll()
        self.template.reset()
        self.previousClean = nil
        self.previousPair = nil
        self.outbox.removeAll()
        self.startTime = nil
        self.interrupted = false
        self.settledAfter = -Double.infinity
        self.motion.reset()
        self.heartRate.reset()
        self.artefactFilter.reset()
        self.spectral.reset()
        self.spectralTrend.reset()
        self.presence.reset()
    }

    /// The stream was interrupted before the next sample — packets lost, the device restarted its counters — though
    /// the time line may not show it: the next sample starts a new beat chain, as a gap does, so that no interval spans
    /// the interruption, and intervals are withheld while the signal settles
    /// (``IBIConfiguration/settlingAfterGap``). Learned references (rhythm, template) are kept.
    public mutating func interrupt() {
        self.interrupted = true
    }

    /// Adds one accelerometer sample.
    ///
    /// - Parameters:
    ///   - x: x axis in device counts (E4: 1/64 g); `y`, `z` likewise.
    ///   - time: seconds since 1970.
    public mutating func appendACC(x: Double, y: Double, z: Double, at time: Double) {
        self.motion.append(x: x, y: y, z: z, at: time)
        self.artefactFilter.appendACC(x: x, y: y, z: z)
        self.spectral.appendACC(x: x, y: y, z: z)
    }

    /// Adds one BVP sample and returns what it confirmed.
    ///
    /// - Parameters:
    ///   - value: BVP, systolic peaks positive, any scale.
    ///   - time: seconds since 1970; samples arrive in time order at ``IBIConfiguration/bvpRate``.
    /// - Returns: a confirmed beat (with its interval when emitted) and a heart-rate tick when this sample
    ///   crossed a whole second.
    /// - Complexity: O(1) amortised; no allocation.
    public mutating func appendBVP(_ value: Double, at time: Double) -> IBIEngineOutput {
        var output = IBIEngineOutput()
        guard value.isFinite, time.isFinite else { return output }
        if self.startTime != nil {
            let step = time - self.lastTime
            if step <= 0 { return output }
            if step > self.configuration.maximumGap || self.interrupted {
                // A gap or an interruption (lost packets, reconnect without reset): no interval may span it, and the
                // signal may carry a step after it (a delta-coded packet lost) until its baseline settles.
                self.interrupted = false
                self.raw.removeAll()
                self.times.removeAll()
                self.slopes.removeAll()
                self.restartChain()
                self.settledAfter = time + self.configuration.settlingAfterGap
                self.spectral.gap()
                self.presence.gap()
            }
        } else {
            self.interrupted = false
            self.startTime = time
            self.lastSecond = time.rounded(.down)
        }
        self.lastTime = time

        let second = time.rounded(.down)
        if second > self.lastSecond {
            self.lastSecond = second
            output.heartRate = self.heartRateTick(at: second)
        }

        let reduced = self.artefactFilter.append(bvp: value)
        output.filteredBVP = reduced
        self.spectral.appendBVP(reduced)
        if self.raw.total == 0 {
            self.lowPass.prime(value)
            self.previousFiltered = value
        }
        self.raw.append(value)
        self.times.append(time)
        let filtered = self.lowPass.process(value)
        let slope = filtered - self.previousFiltered
        self.previousFiltered = filtered
        self.slopes.append(slope)
        self.presence.append(slope)
        let index = self.raw.total - 1
        if let beat = self.judgePendingIfComplete(index: index) { self.enqueue(beat, now: time) }
        if let beat = self.detect(slope: slope, index: index) { self.enqueue(beat, now: time) }
        output.beat = self.dequeue(now: time)
        return output
    }

    /// The 1 Hz heart rate: from clean beats where they cover the window (the spectral track follows them), from
    /// the spectrum otherwise, nothing when neither has a value (``SpectralHeartRate``).
    mutating func heartRateTick(at second: Double) -> HeartRateSample? {
        self.spectral.analyseMotion()
        self.presence.update(at: second, interval: self.typicalInterval,
                             still: self.motion.lastMovement < second - PulsePresence.windowSeconds)
        let beats = self.heartRate.heartRate(at: second)
        // Beats whose newest is older than ``freshBeatAge`` are stale (at the onset of a run the heart rises while
        // the clean beats stop): they do not seed the spectral track, and its value, when it has one, goes first.
        let fresh = self.heartRate.ageOfNewest(at: second).map { $0 <= Self.freshBeatAge } ?? false
        if let bpm = beats, fresh {
            self.spectral.seed(beatsPerMinute: bpm)
            _ = self.spectralTrend.update(bpm, at: second)
            return HeartRateSample(time: second - Self.heartRateDelay, beatsPerMinute: bpm, confidence: 1, source: .beats)
        }
        // At rest a spectral value needs a pulse in the PPG (``PulsePresence``): without skin contact the spectrum of
        // sensor noise can hold a peak as concentrated as a pulse's. While the wrist moves the slope carries the motion
        // too, and the spectral estimator's own rules for a PPG without a pulse apply. A track the estimator holds at
        // rest without a pulse is the noise's: it is dropped, so that it does not carry into motion as a pulse.
        let still = self.motion.lastMovement < second - self.configuration.maximumInterval
            - self.configuration.motionHoldoff
        if let estimate = self.spectral.estimate(), estimate.confidence >= SpectralHeartRate.publishedConfidence,
           !still || self.presence.isPresent(at: second) {
            let bpm = self.spectralTrend.update(estimate.beatsPerMinute, at: second)
            return HeartRateSample(time: second - Self.heartRateDelay, beatsPerMinute: bpm, confidence: estimate.confidence,
                                   source: .spectral)
        }
        if still && !self.presence.isPresent(at: second) { self.spectral.forgetTrack() }
        guard let bpm = beats else { return nil }
        _ = self.spectralTrend.update(bpm, at: second)
        return HeartRateSample(time: second - Self.heartRateDelay, beatsPerMinute: bpm, confidence: 1, source: .beats)
    }

    /// BVP sample rate in Hz, as the engine uses it.
    var sampleRate: Double { self.configuration.bvpRate > 0 ? self.configuration.bvpRate : 64 }

    /// Starts a new beat chain (after a gap or reset) while keeping learned references.
    mutating func restartChain() {
        self.lowPass = Biquad(lowPass: 5, sampleRate: self.configuration.bvpRate > 0 ? self.configuration.bvpRate : 64)
        self.phase = .searching
        self.maximumSlope = 0
        self.lastUpstrokeIndex = Int.min / 2
        self.lastPeakIndex = Int.min / 2
        self.previousFootTime = nil
        self.previousPulseOK = false
        self.cleanRun = 0
        self.previousPair = nil
        self.pending = nil
        self.earlyPulse = nil
        self.chainBeforeLast = nil
        self.withholdHeld()
    }
}
