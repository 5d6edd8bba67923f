/// Heart rate from the spectrum of the (artefact-reduced) BVP, tracked through motion with the accelerometer's
/// frequencies set aside: the estimate the engine publishes when there are too few clean beats (SPEC §19).
///
/// Every second (``estimate()``), over the last 8 s decimated to 16 Hz (128 samples; BVP low-passed at 4 Hz and
/// first-differenced, which flattens the 1/f power of posture and contact changes; mean removed, Hann window): the
/// power on a 1 bpm grid over 40–210 bpm (Goertzel, coefficients computed in `init`), each window's spectrum
/// normalised and averaged with the previous ones (weight 0.35 for the newest). When the wrist moves (ACC level
/// over the window > 0.04 g) the accelerometer's spectral peaks and their second harmonics mark the BVP bins within
/// ±4 bpm of them as motion. Candidates are the BVP's local maxima; a local maximum with a non-motion peak at a half
/// or a third of its rate holding at least `1 / k²` of its power stands for that peak, its fundamental
/// (``fundamental(of:)``). A candidate's *concentration* is the share of the band's non-motion power within ±12 bpm
/// of it and of its second harmonic (the Hann main lobe of an 8 s window is ±15 bpm), counted without the harmonic
/// when its own lobe holds less than 0.4 of the harmonic's (a sub-harmonic). Beside the cadence (the accelerometer's
/// own peaks while the wrist moves periodically; within 12 bpm of a track, also a harmonic the mask adds that is an
/// accelerometer peak too, as a stride-rate swing's step), the part of the lobe the mask hides is made up for by the
/// window's lobe shape, by at most 4/3 (``isBesideTheCadence(_:)``); while the track is lost, the 4 s acquisition
/// rule below judges the concentration without it.
///
/// - Acquiring (start, reset, track lost): the best non-motion candidate must stay within ±5 bpm from second to
///   second for 4 s with concentration ≥ 0.55 throughout (uncorrected beside the cadence), or for 12 s with ≥ 0.35
///   (consecutive windows share 7 s, and the averaging adds a few: a noise peak lasts ≈ 10 s, a pulse stays); or,
///   its runs broken, gather enough *evidence*: the seconds it was the best candidate (≥ 0.35) within ±2 bpm,
///   weighted by concentration (capped at 0.5) and decayed by 0.97 a second, reach 5 (``evidenceThreshold``). One
///   second in which no candidate passes does not end a run (``CandidateRun``).
/// - Probation: a track acquired (or taken over) from the spectrum while the wrist moves publishes at most 0.3 for
///   its first 10 s (``probationSeconds``). The first difference tilts a broadband wobble's power toward the top of
///   the band, where a peak of that noise can pass the 12 s rule off the wrist; a pulse outlasts the probation, a
///   noise peak does not. A track seeded by beats is not on probation.
/// - Tracking: the best non-motion candidate within ±(12 + 3 × seconds since the last value) bpm of the track,
///   concentration ≥ 0.35; failing that, a weak one (≥ 0.2) within ±6 bpm of a track at most 2 s old, published at
///   the lowest confidence, at most 10 s in a row; failing that, a motion peak within ±8 bpm of the track — the
///   cadence on the heart rate, which an 8 s window cannot resolve — with confidence at most 0.3, and only
///   ``publishedConfidence`` once ``mergedHoldLimit`` (30 s) have passed without a value from a peak of its own (the
///   cadence alone cannot show that a pulse is still there); failing that, with the track inside a motion peak's main
///   lobe, a peak of its own near the track in the last 16 s (``zoomTrack(_:)``: main lobe ±7.5 bpm, so a pulse 8–19
///   bpm from the cadence can be resolved), at most 0.3. A candidate outside the search window with twice the
///   concentration takes the track over once it has been acquired as above.
/// - Coasting: when none of these applies, the wrist moves periodically (the strongest ACC peak's ±12 bpm holds
///   ≥ ``acceptance`` of the ACC power) and the track lies within ``mainLobe`` + ``motionHalfWidth`` of a motion
///   peak, the last value from a peak of its own is published at ``publishedConfidence`` — a hold while the pulse
///   cannot be resolved from the cadence, which does not keep the track alive (lost after ``maximumHold`` s). Only
///   while the last 16 s still bear the held value out (``isBorneOut(_:)``): once they show no peak of its own near
///   it, the heart has moved (or gone) and the hold is no longer published.
/// - Nothing is published when the BVP is flat or no candidate passes (no pulse: off-wrist, no contact, a PPG that
///   shows only the motion); after 10 s without a value the track is lost.
///
/// The value published (and the track's) is the newest window's own non-motion peak within ±4 bpm of the averaged
/// spectrum's, when it has one: the average lags a moving rate by one or two windows.
///
/// Confidence is `(concentration − 0.25) / 0.5` clamped to 0…1; the engine publishes from 0.2. While the wrist moves, a
/// value the last 16 s do not bear out (no peak of its own near it in the long window, unless it lies on a motion
/// peak: ``isBorneOut(_:)``) is published at the lowest confidence, and coasting does not hold it; the track follows
/// it as before.
/// ``seed(beatsPerMinute:)`` hands the estimator the beat-derived rate while clean beats exist, so motion starts with
/// the track on the pulse. Memory is fixed at `init`; nothing allocates per sample or per estimate.
public struct SpectralHeartRate: Sendable {
    /// Analysis window, seconds.
    public static let windowSeconds = 8.0
    /// Analysis rate, Hz (BVP and ACC are low-passed and decimated to it).
    static let analysisRate = 16.0
    static let lowestBPM = 40
    static let highestBPM = 210
    /// The grid goes on above the published range so that an artefact just above it (a cadence's second harmonic)
    /// is seen, masked, and its leakage recognised (``leakageRatio``).
    static let gridTopBPM = 250
    /// A local maximum within ±25 bpm of a motion peak with less than this share of its power is that peak's
    /// leakage (a Hann window's first sidelobe is at −31 dB, 0.0007), not a pulse.
    static let leakageRatio = 0.01
    /// Grid bins a published value may lie in.
    private var candidateBins: Int { Self.highestBPM - Self.lowestBPM + 1 }
    /// Smallest concentration of a candidate for acquisition.
    static let acceptance = 0.55
    /// Smallest concentration of a candidate near the track, and of a candidate acquired by persistence alone.
    static let trackingAcceptance = 0.35
    /// Seconds a weaker candidate (≥ ``trackingAcceptance``) must hold before it is acquired: consecutive 8 s windows
    /// share 7 s of signal and the spectra are averaged, so a noise peak persists for ≈ 10 s at most; a pulse stays.
    static let persistenceTicks = 12
    /// Smallest concentration of a peak within ±6 bpm of a fresh track (see ``maximumWeakRun``).
    static let weakAcceptance = 0.2
    /// Longest run of values from weak peaks before the track is dropped.
    static let maximumWeakRun = 10
    /// Seconds a candidate must hold before it is published (or takes over the track).
    static let acquisitionTicks = 4
    /// Per-second decay of the acquisition evidence (``acquisitionEvidence``): a memory of ≈ 30 s.
    static let evidenceDecay = 0.97
    /// A second's evidence is the best candidate's concentration, at most this: one strong burst of a few seconds
    /// (which the 4 s rule of ``CandidateRun`` judges) cannot make up for persistence.
    static let evidenceCap = 0.5
    /// Evidence is summed over ±this many bpm around the candidate: a pulse wanders by a few bpm.
    static let evidenceReach = 2
    /// Evidence at which the best candidate is acquired although its runs were broken: at least 12 seconds as the
    /// best (≥ ``trackingAcceptance``) within ±2 bpm, more the longer they are spread out. Off the wrist (bench/ibi/walk.py
    /// off-wrist sets, seeds 1–40: 80 recordings) the most any candidate gathered was 4.1, so this is 1.2 × that.
    static let evidenceThreshold = 5.0
    /// Seconds without a value after which the track is lost and must be acquired again.
    static let maximumHold = 10
    /// ACC level (g, root of summed per-axis variances of the 4 Hz-low-passed ACC over the window) above which the
    /// accelerometer's frequencies count as motion. The E4 at rest: 0.01–0.02 g.
    static let movingLevel = 0.04
    /// BVP bins within this many bpm of an accelerometer peak (or its harmonic) are motion.
    static let motionHalfWidth = 4.0
    /// Seconds a track acquired from the spectrum while the wrist moves is on probation: one window plus the
    /// running average's memory, the time a peak of noise lasts.
    static let probationSeconds = 10
    /// Highest confidence of a value while the track is on probation.
    static let probationConfidence = 0.3
    /// Spectral values below this confidence are not published.
    public static let publishedConfidence = 0.2
    /// Weight of the newest window's spectrum in the running average (≈ 3 windows).
    static let smoothing = 0.35
    /// The newest window's own peak is published instead of the averaged spectrum's when it lies within this many
    /// bpm of it (the motion mask's half-width: the same lobe, not another peak): the average lags a rising rate by
    /// a window or two, the newest window does not.
    static let newestPeakReach = 4
    /// Half-width, bpm, of an 8 s Hann window's main lobe (2 bins of 1/8 Hz = 0.25 Hz = 15 bpm): a pulse closer than
    /// this plus ``motionHalfWidth`` to a motion peak shares that peak's lobe and cannot be resolved from it.
    static let mainLobe = 15.0
    /// Beside the cadence, the smallest share of a candidate's lobe the mask may be taken to have left
    /// (``concentration(at:clean:corrected:)``): the lobe's power is scaled up by at most 4/3. With 1/2 (up to
    /// twice), applied while the track was lost too, a no-pulse walking recording published 42 s, up to confidence
    /// 0.97 (round 13, Docs/ibi.md).
    static let besideCadenceLeast = 0.75
    /// The longer window read beside the cadence (``zoomTrack(_:)``), seconds: its Hann main lobe is ±7.5 bpm, half
    /// the 8 s window's, so a pulse 8–19 bpm from a motion peak — inside the 8 s lobe — can show as a peak of its own.
    static let zoomSeconds = 16.0
    /// Half-width, bpm, of the long window's motion mask around each accelerometer peak and its 2nd and 3rd harmonics.
    static let zoomHalfWidth = 4.0
    /// Half-width, bpm, of a candidate's lobe in the long window (its main lobe, less the outer quarter).
    static let zoomLobe = 6
    /// Largest distance, bpm, of the long window's peak from the track.
    static let zoomReach = 6.0
    /// Smallest share of the long window's non-motion band power in the candidate's lobe. Measured offline
    /// (Docs/ibi.md, round 24): near a rate 8–19 bpm from the cadence, a no-pulse walk or run reaches it in 1 % of
    /// seconds, a real pulse under running artefact in half of them, within 4 bpm of the heart in 9 of 10.
    static let zoomAcceptance = 0.2
    /// Seconds after the last value from a peak of its own (or a seed) for which the merged cadence peak (a masked
    /// peak on the track) is published at up to 0.3; after them it is a hold, at ``publishedConfidence``. The pulse on
    /// the cadence cannot be told from the cadence alone — which a wristband taken off mid-run still shows — so only
    /// the evidence that came before speaks for it, and it ages. A runner's heart can sit on the cadence for minutes,
    /// so the value goes on, as a hold.
    static let mergedHoldLimit = 30

    private let size: Int
    private let zoomSize: Int
    private let zoomHann: [Double]
    private var zoomPower: [Double]
    private var zoomACC: [Double]
    private var zoomMask: [Bool]
    private let bvpFactor: Int
    private let accFactor: Int
    private let countsPerG: Double
    private var bvp: FixedRing<Double>
    private var acc: FixedRing<SIMD4<Double>>
    private var bvpLowPass: Biquad
    private var accLowPass: (Biquad, Biquad, Biquad)
    private var bvpPhase = 0
    private var accPhase = 0
    private var bvpPrimed = false
    private var accPrimed = false
    /// Decimated BVP samples since the last reset or gap.
    private var bvpSamples = 0
    private var previousDecimated = 0.0
    private var hasPreviousDecimated = false
    private var accSamples = 0

    private let coefficients: [Double]
    private let hann: [Double]
    /// The Hann window's power response 0…12 bpm from a tone (index: the offset in bpm), 1 at 0: how a pulse's power
    /// spreads over the ±12 bpm a candidate's lobe counts (``concentration(at:clean:corrected:)``). Computed in `init`.
    private let lobeShape: [Double]
    private var scratch: [Double]
    private var bvpPower: [Double]
    private var accPower: [Double]
    private var motionMask: [Bool]
    private var motionPeaks: [Double]
    private var peakBins: [Int]
    private var smoothedPower: [Double]
    /// The newest window's own normalised spectrum (``smoothedPower`` before averaging it in): its peak is the
    /// published value when it lies within ``newestPeakReach`` of the averaged spectrum's (``accept(bin:concentration:)``).
    private var newestPower: [Double]
    /// While the track is lost: per grid bin, the leaky sum (``evidenceDecay`` a second) of the seconds the best
    /// candidate lay there, each weighted by its concentration (at most ``evidenceCap``). Zero while a track exists.
    /// Evidence stays in its bin: widened each second so as to follow a moving rate, it chained tones at nearby rates
    /// seconds apart into a track that no single one of them supports.
    private var acquisitionEvidence: [Double]
    private var evidenceLive = false
    private var smoothedWindows = 0

    private var track: Double?
    /// Seconds a track acquired from the spectrum while the wrist moves stays on probation (``probationSeconds``).
    private var probation = 0
    private var secondsSinceValue = 0
    /// The best candidate's run of seconds (acquisition, take-over).
    private var candidate = CandidateRun()
    /// Consecutive values taken from weak peaks on the track.
    private var weakRun = 0
    /// Whether the last analysis found the wrist moving with the track inside a motion peak's main lobe.
    private var trackInCadenceLobe = false
    /// The last value from a peak of its own (not a weak peak, not the merged cadence peak), which coasting holds.
    private var coastValue: Double?
    /// Whether the last analysis's value came from the merged cadence peak.
    private var fromMergedPeak = false
    /// ACC analysis of this second (``analyseMotion()``): the wrist moves, periodically, at ``motionPeaks``.
    private var motionAnalysed = false
    private var moving = false
    private var periodic = false
    private var motionCount = 0
    /// The accelerometer's cadence (its strongest peak, bpm) while the wrist moves periodically; nil otherwise.
    private var cadence: Double?
    /// Whether ``goertzel(intoACC:accumulate:zoom:)`` stores into the long window's spectra.
    private var zoomStore = false
    /// Seconds since the last value from a peak of its own (not the merged cadence peak) or a seed
    /// (``mergedHoldLimit``).
    private var secondsSinceOwnPeak = 0
    /// Whether this second's long window has been read (``analyseZoom()``).
    private var zoomState = ZoomState.unread
    /// The long window's non-motion power in 40–210 bpm, after ``analyseZoom()``.
    private var zoomClean = 0.0

    /// - Parameters:
    ///   - bvpRate: BVP sample rate in Hz.
    ///   - accRate: ACC sample rate in Hz.
    ///   - accCountsPerG: ACC counts per g.
    public init(bvpRate: Double = 64, accRate: Double = 32, accCountsPerG: Double = 64) {
        let bvpRate = bvpRate > 0 ? bvpRate : 64
        let accRate = accRate > 0 ? accRate : 32
        self.bvpFactor = max(1, Int((bvpRate / Self.analysisRate).rounded()))
        self.accFactor = max(1, Int((accRate / Self.analysisRate).rounded()))
        self.countsPerG = accCountsPerG > 0 ? accCountsPerG : 64
        let rate = bvpRate / Double(self.bvpFactor)
        self.size = Int(Self.windowSeconds * rate)
        self.zoomSize = Int(Self.zoomSeconds * rate)
        self.bvp = FixedRing(minimumCapacity: self.zoomSize, filler: 0)
        self.acc = FixedRing(minimumCapacity: self.zoomSize, filler: .zero)
        self.bvpLowPass = Biquad(lowPass: 4, sampleRate: bvpRate)
        self.accLowPass = (Biquad(lowPass: 4, sampleRate: accRate), Biquad(lowPass: 4, sampleRate: accRate),
                           Biquad(lowPass: 4, sampleRate: accRate))
        let bins = Self.gridTopBPM - Self.lowestBPM + 1
        var coefficients = [Double](repeating: 0, count: bins)
        for bin in 0..<bins {
            let hertz = Double(Self.lowestBPM + bin) / 60
            coefficients[bin] = 2 * Self.cos(2 * Double.pi * hertz / rate)
        }
        self.coefficients = coefficients
        var hann = [Double](repeating: 0, count: self.size)
        for index in 0..<self.size {
            hann[index] = 0.5 - 0.5 * Self.cos(2 * Double.pi * Double(index) / Double(self.size - 1))
        }
        self.hann = hann
        var zoomHann = [Double](repeating: 0, count: self.zoomSize)
        for index in 0..<self.zoomSize {
            zoomHann[index] = 0.5 - 0.5 * Self.cos(2 * Double.pi * Double(index) / Double(self.zoomSize - 1))
        }
        self.zoomHann = zoomHann
        var lobeShape = [Double](repeating: 0, count: 13)
        for offset in 0..<13 {
            let step = 2 * Double.pi * Double(offset) / 60 / rate
            var re = 0.0, im = 0.0
            for index in 0..<self.size {
                re += hann[index] * Self.cos(step * Double(index))
                im += hann[index] * Self.cos(step * Double(index) - Double.pi / 2)
            }
            lobeShape[offset] = re * re + im * im
        }
        let peak = lobeShape[0] > 0 ? lobeShape[0] : 1
        for offset in 0..<13 { lobeShape[offset] /= peak }
        self.lobeShape = lobeShape
        self.scratch = [Double](repeating: 0, count: self.zoomSize)
        self.zoomPower = [Double](repeating: 0, count: bins)
        self.zoomACC = [Double](repeating: 0, count: bins)
        self.zoomMask = [Bool](repeating: false, count: bins)
        self.bvpPower = [Double](repeating: 0, count: bins)
        self.accPower = [Double](repeating: 0, count: bins)
        self.motionMask = [Bool](repeating: false, count: bins)
        self.motionPeaks = [Double](repeating: 0, count: 9)
        self.peakBins = [Int](repeating: 0, count: 16)
        self.smoothedPower = [Double](repeating: 0, count: bins)
        self.newestPower = [Double](repeating: 0, count: bins)
        self.acquisitionEvidence = [Double](repeating: 0, count: bins)
    }

    /// Forgets the signal and the track, as after a reconnect.
    public mutating func reset() {
        self.gap()
        self.track = nil
        self.secondsSinceOwnPeak = 0
        self.secondsSinceValue = 0
        self.candidate.end()
        self.weakRun = 0
        self.coastValue = nil
        self.probation = 0
        self.clearEvidence()
    }

    /// Drops the track and what was gathered toward one (the engine found no pulse in the PPG at rest); the window
    /// is kept.
    mutating func forgetTrack() {
        self.track = nil
        self.candidate.end()
        self.weakRun = 0
        self.coastValue = nil
        self.probation = 0
        self.clearEvidence()
    }

    /// The signal was interrupted: the window starts over (8 s before the next value); the track is kept.
    public mutating func gap() {
        self.bvp.removeAll()
        self.acc.removeAll()
        self.bvpSamples = 0
        self.accSamples = 0
        self.bvpPhase = 0
        self.accPhase = 0
        self.bvpPrimed = false
        self.accPrimed = false
        self.hasPreviousDecimated = false
        self.smoothedWindows = 0
        self.motionAnalysed = false
        self.moving = false
        self.periodic = false
        self.motionCount = 0
        self.cadence = nil
    }

    /// The beat-derived rate of this second: the track follows it, so the spectrum need not acquire the pulse again
    /// when motion begins.
    public mutating func seed(beatsPerMinute: Double) {
        guard beatsPerMinute.isFinite, beatsPerMinute >= Double(Self.lowestBPM),
              beatsPerMinute <= Double(Self.highestBPM) else { return }
        self.track = beatsPerMinute
        self.coastValue = beatsPerMinute
        self.secondsSinceOwnPeak = 0
        self.probation = 0
        self.secondsSinceValue = 0
        self.weakRun = 0
        self.candidate.end()
    }

    /// Adds one BVP sample (any scale, systolic peaks positive); non-finite samples are ignored.
    public mutating func appendBVP(_ value: Double) {
        guard value.isFinite else { return }
        let value = min(max(value, -1e9), 1e9)
        if !self.bvpPrimed {
            self.bvpLowPass.prime(value)
            self.bvpPrimed = true
        }
        let filtered = self.bvpLowPass.process(value)
        self.bvpPhase += 1
        if self.bvpPhase >= self.bvpFactor {
            self.bvpPhase = 0
            // The first difference: a PPG in motion carries most of its power at the lowest frequencies (posture,
            // contact pressure, blood pooling), falling roughly as 1/f; the difference flattens that, so the pulse's
            // lobe stands out from it.
            if self.bvpSamples > 0 || self.hasPreviousDecimated { self.bvp.append(filtered - self.previousDecimated) }
            self.hasPreviousDecimated = true
            self.previousDecimated = filtered
            self.bvpSamples = self.bvp.total
        }
    }

    /// Adds one ACC sample (device counts); non-finite samples are ignored.
    public mutating func appendACC(x: Double, y: Double, z: Double) {
        guard x.isFinite, y.isFinite, z.isFinite else { return }
        let limit = 16 * self.countsPerG
        let x = min(max(x, -limit), limit), y = min(max(y, -limit), limit), z = min(max(z, -limit), limit)
        if !self.accPrimed {
            self.accLowPass.0.prime(x)
            self.accLowPass.1.prime(y)
            self.accLowPass.2.prime(z)
            self.accPrimed = true
        }
        let value = SIMD4(self.accLowPass.0.process(x), self.accLowPass.1.process(y), self.accLowPass.2.process(z), 0)
        self.accPhase += 1
        if self.accPhase >= self.accFactor {
            self.accPhase = 0
            self.acc.append(value / self.countsPerG)
            self.accSamples += 1
        }
    }

    /// The heart rate over the last 8 s, or `nil` when there is none to publish; call once a second.
    ///
    /// - Returns: beats per minute and a confidence in 0…1.
    /// - Complexity: O(window × grid) ≈ 90 000 multiply-adds; no allocation.
    public mutating func estimate() -> (beatsPerMinute: Double, confidence: Double)? {
        self.trackInCadenceLobe = false
        self.fromMergedPeak = false
        self.zoomState = .unread
        defer { self.motionAnalysed = false }
        var result = self.analyse()
        if self.probation > 0 {
            if self.track == nil {
                self.probation = 0
            } else {
                self.probation -= 1
                if let value = result {
                    result = (value.beatsPerMinute, min(value.confidence, Self.probationConfidence))
                }
            }
        }
        // A value the long window does not bear out is published at the lowest confidence and is not held.
        if let value = result, value.confidence > Self.publishedConfidence, !self.isBorneOut(value.beatsPerMinute) {
            result = (value.beatsPerMinute, Self.publishedConfidence)
        }
        if let result, !self.fromMergedPeak, result.confidence > Self.publishedConfidence {
            self.coastValue = result.beatsPerMinute
        }
        if result != nil && !self.fromMergedPeak {
            self.secondsSinceOwnPeak = 0
        } else {
            self.secondsSinceOwnPeak += 1
        }
        if result == nil {
            self.secondsSinceValue += 1
            if self.secondsSinceValue > Self.maximumHold {
                self.track = nil
                self.coastValue = nil
            }
            // Coasting through the cadence: the wrist moves periodically and the track lies inside a motion peak's
            // main lobe, where an 8 s window cannot tell the pulse from the cadence and every candidate is masked or
            // merged. The heart has not stopped: the last value from a peak of its own (a weak peak or the merged
            // cadence peak may already have pulled the track toward the cadence) is published at the lowest
            // confidence, as a hold, not as evidence. The track still ages (its search window widens; after
            // ``maximumHold`` seconds it is lost and coasting ends): a wristband that comes off mid-run publishes at
            // most that long, at ``publishedConfidence``. The hold lasts only while the last 16 s still bear the value
            // out: once they show no peak of its own near it (and it is not on one of their motion peaks), the heart
            // has moved on or gone. On the e4m sets such holds were more than 5 bpm off in 56–78 % of the seconds
            // (Docs/ibi.md, round 26).
            if self.trackInCadenceLobe, self.track != nil, let value = self.coastValue, self.isBorneOut(value) {
                return (value, Self.publishedConfidence)
            }
        } else {
            self.secondsSinceValue = 0
        }
        return result
    }

    /// Whether a value of this second is borne out by the last 16 s: false only while the wrist moves, when the long
    /// window (``analyseZoom()``) shows no peak of its own near the value (``zoomPeak(near:)``: within ±6 bpm,
    /// holding ≥ ``zoomAcceptance``) and the value does not lie on one of its motion peaks (the merged cadence, where
    /// the long window cannot see a pulse apart from the motion either). A pulse lasts, so its peak is in the long
    /// window as well as the short one; residue the accelerometer does not explain comes and goes. On the e4m running
    /// sets (Docs/ibi.md, round 25), of the values above 0.2 from a peak near the track, 11–22 % were more than 5 bpm
    /// off where the long window bore them out and 36–48 % where it did not.
    private mutating func isBorneOut(_ bpm: Double) -> Bool {
        guard self.moving, self.analyseZoom(), !self.zoomMasksNear(bpm) else { return true }
        return self.zoomPeak(near: bpm) != nil
    }

    private mutating func analyse() -> (beatsPerMinute: Double, confidence: Double)? {
        guard self.bvpSamples >= self.size else { return nil }
        let bins = self.coefficients.count
        // BVP spectrum.
        let energy = self.load(axis: nil)
        guard energy.isFinite, energy > 1e-12 else { return nil }
        self.goertzel(intoACC: false, accumulate: false)
        // Spectra of consecutive windows, each normalised to unit band power, averaged with weight
        // ``smoothing`` for the newest: a pulse whose rate moves by a few bpm a second stays in one lobe while
        // uncorrelated residue (what the accelerometer does not explain) averages down.
        var band = 0.0
        for bin in 0..<bins { band += self.bvpPower[bin] }
        guard band > 0, band.isFinite else { return nil }
        let weight = self.smoothedWindows == 0 ? 1 : Self.smoothing
        for bin in 0..<bins {
            let newest = self.bvpPower[bin] / band
            self.newestPower[bin] = newest
            self.smoothedPower[bin] += weight * (newest - self.smoothedPower[bin])
            self.bvpPower[bin] = self.smoothedPower[bin]
        }
        self.smoothedWindows += 1
        if !self.motionAnalysed { self.analyseMotion() }
        let motionCount = self.motionCount
        let periodic = self.periodic
        var total = 0.0, motionPower = 0.0
        for bin in 0..<bins {
            let bpm = Double(Self.lowestBPM + bin)
            var mask = false
            for index in 0..<motionCount where abs(self.motionPeaks[index] - bpm) <= Self.motionHalfWidth { mask = true }
            self.motionMask[bin] = mask
            guard bin < self.candidateBins else { continue }
            total += self.bvpPower[bin]
            if mask { motionPower += self.bvpPower[bin] }
        }
        let clean = total - motionPower
        guard total > 0, total.isFinite else { return nil }
        // Candidates: local maxima, strongest first.
        var peakCount = 0
        for bin in 1..<self.candidateBins {
            let p = self.bvpPower[bin]
            guard p >= self.bvpPower[bin - 1], p > self.bvpPower[bin + 1], !self.isLeakage(bin) else { continue }
            if peakCount < self.peakBins.count {
                self.peakBins[peakCount] = bin
                peakCount += 1
            } else if p > self.bvpPower[self.peakBins[peakCount - 1]] {
                self.peakBins[peakCount - 1] = bin
            } else {
                continue
            }
            var index = peakCount - 1
            while index > 0 && self.bvpPower[self.peakBins[index - 1]] < self.bvpPower[self.peakBins[index]] {
                // By hand: the generic `swapAt`, unspecialised in a debug build, allocates its accessor's frame.
                let bin = self.peakBins[index]
                self.peakBins[index] = self.peakBins[index - 1]
                self.peakBins[index - 1] = bin
                index -= 1
            }
        }
        guard peakCount > 0 else { return nil }

        // The best non-motion candidate anywhere (largest concentration), for acquisition and take-over.
        var globalHit: (bin: Int, concentration: Double)?
        // A peak that is the 2nd or 3rd harmonic of a peak below it stands for that peak (the fundamental).
        for index in 0..<peakCount where !self.motionMask[self.peakBins[index]] {
            let bin = self.fundamental(of: self.peakBins[index])
            let c = self.concentration(at: bin, clean: clean)
            if c > (globalHit?.concentration ?? -1) { globalHit = (bin, c) }
        }

        if let track = self.track {
            self.clearEvidence()
            for index in 0..<motionCount
            where periodic && abs(self.motionPeaks[index] - track) <= Self.mainLobe + Self.motionHalfWidth {
                self.trackInCadenceLobe = true
            }
            let radius = 12 + 3 * Double(self.secondsSinceValue)
            var chosen: (bin: Int, concentration: Double)?
            for index in 0..<peakCount {
                let bin = self.peakBins[index]
                guard !self.motionMask[bin], abs(Double(Self.lowestBPM + bin) - track) <= radius else { continue }
                let c = self.concentration(at: bin, clean: clean)
                if c > (chosen?.concentration ?? -1) { chosen = (bin, c) }
            }
            if let c = chosen, c.concentration < Self.trackingAcceptance { chosen = nil }
            // Take-over by a stronger peak the window could not follow.
            if let hit = globalHit, hit.concentration >= Self.trackingAcceptance,
               abs(Double(Self.lowestBPM + hit.bin) - track) > radius,
               chosen.map({ hit.concentration > 2 * $0.concentration }) ?? true {
                if self.candidate.hold(Double(Self.lowestBPM + hit.bin), concentration: hit.concentration) {
                    if self.moving { self.probation = Self.probationSeconds }
                    return self.accept(bin: hit.bin, concentration: hit.concentration)
                }
            } else {
                self.candidate.end()
            }
            if let chosen {
                self.weakRun = 0
                return self.accept(bin: chosen.bin, concentration: chosen.concentration)
            }
            // A weak peak right on the track: the pulse under residue the accelerometer does not explain. Followed
            // at the lowest published confidence, for ``maximumWeakRun`` seconds at most without a stronger one.
            if self.secondsSinceValue <= 2, self.weakRun < Self.maximumWeakRun {
                var weak: (bin: Int, concentration: Double)?
                for index in 0..<peakCount {
                    let bin = self.peakBins[index]
                    guard !self.motionMask[bin], abs(Double(Self.lowestBPM + bin) - track) <= 6 else { continue }
                    let c = self.concentration(at: bin, clean: clean)
                    if c > (weak?.concentration ?? -1) { weak = (bin, c) }
                }
                if let weak, weak.concentration >= Self.weakAcceptance,
                   let value = self.accept(bin: weak.bin, concentration: weak.concentration) {
                    self.weakRun += 1
                    return (value.beatsPerMinute, Self.publishedConfidence)
                }
            }
            // The cadence on the heart rate: one merged peak; a hold once ``mergedHoldLimit`` seconds have passed
            // without a value from a peak of its own.
            for index in 0..<peakCount {
                let bin = self.peakBins[index]
                guard self.motionMask[bin], abs(Double(Self.lowestBPM + bin) - track) <= 8 else { continue }
                let c = self.concentrationTotal(at: bin, total: total)
                guard c >= Self.trackingAcceptance else { break }
                guard let value = self.accept(bin: bin, concentration: c, newest: false) else { return nil }
                self.fromMergedPeak = true
                let limit = self.secondsSinceOwnPeak < Self.mergedHoldLimit ? 0.3 : Self.publishedConfidence
                return (value.beatsPerMinute, min(value.confidence, limit))
            }
            // Beside the cadence, the long window may resolve the pulse from it: a peak of its own, published at the
            // merged peak's confidence (the long window lags a moving rate by 8 s, the cadence's flanks are near).
            if self.trackInCadenceLobe, let zoom = self.zoomTrack(track) {
                self.track = zoom
                self.candidate.end()
                self.weakRun = 0
                return (zoom, Self.probationConfidence)
            }
            return nil
        }
        guard let hit = globalHit, hit.concentration >= Self.trackingAcceptance else {
            self.candidate.skip()
            _ = self.accumulateEvidence(bin: nil, concentration: 0)
            return nil
        }
        let plain = self.concentration(at: hit.bin, clean: clean, corrected: false)
        let held = self.candidate.hold(Double(Self.lowestBPM + hit.bin), concentration: plain)
        let evident = self.accumulateEvidence(bin: hit.bin, concentration: hit.concentration)
        if held || evident {
            if self.moving { self.probation = Self.probationSeconds }
            return self.accept(bin: hit.bin, concentration: hit.concentration)
        }
        return nil
    }

    /// One second of acquisition evidence (``acquisitionEvidence``): decays what is there and adds `concentration`
    /// (capped) at `bin`, the best candidate (nil when none passes ``trackingAcceptance``); true when the evidence
    /// within ±``evidenceReach`` of `bin` reaches ``evidenceThreshold``. In motion, while the track is lost, the pulse
    /// is the best candidate in about half the seconds, in runs that seconds of residue break (bench/ibi/walk.py's
    /// running sets), so the consecutive run ``CandidateRun`` needs may never come; a noise peak
    /// wins one run of seconds and is gone.
    private mutating func accumulateEvidence(bin: Int?, concentration: Double) -> Bool {
        let count = self.candidateBins
        if self.evidenceLive {
            for b in 0..<count { self.acquisitionEvidence[b] *= Self.evidenceDecay }
        }
        guard let bin, bin >= 0, bin < count else { return false }
        self.evidenceLive = true
        self.acquisitionEvidence[bin] += min(concentration, Self.evidenceCap)
        var sum = 0.0
        for b in max(0, bin - Self.evidenceReach)...min(count - 1, bin + Self.evidenceReach) {
            sum += self.acquisitionEvidence[b]
        }
        return sum >= Self.evidenceThreshold
    }

    /// Forgets the acquisition evidence (a track exists, or a reset).
    private mutating func clearEvidence() {
        guard self.evidenceLive else { return }
        for b in 0..<self.acquisitionEvidence.count { self.acquisitionEvidence[b] = 0 }
        self.evidenceLive = false
    }

    /// Reads the last 8 s of ACC, once a second (``IBIEngine`` calls it on every tick, before ``estimate()``, whose
    /// analysis reads it; otherwise ``estimate()`` does): whether the wrist moves (level > ``movingLevel``), the
    /// accelerometer's spectral peaks and their second harmonics (``motionPeaks``), and whether the motion is
    /// periodic (a cadence).
    mutating func analyseMotion() {
        self.motionAnalysed = true
        let bins = self.coefficients.count
        // ACC spectrum and level.
        var moving = false
        if self.accSamples >= self.size {
            var level = 0.0
            for axis in 0..<3 { level += self.variance(axis: axis) }
            moving = level.isFinite && level.squareRoot() > Self.movingLevel
            // The ACC spectrum is read only while the wrist moves: at rest its three transforms are skipped.
            if moving {
                for axis in 0..<3 {
                    _ = self.load(axis: axis)
                    self.goertzel(intoACC: true, accumulate: axis > 0)
                }
            }
        }
        // Motion frequencies: the accelerometer's strongest peaks and their second harmonics.
        var motionCount = 0
        var periodic = false
        var cadence: Double?
        defer {
            self.moving = moving
            self.periodic = periodic
            self.motionCount = motionCount
            self.cadence = cadence
        }
        if moving {
            var strongest = 0.0, strongestBin = 0, accTotal = 0.0
            for bin in 0..<bins {
                accTotal += self.accPower[bin]
                if self.accPower[bin] > strongest { strongest = self.accPower[bin]; strongestBin = bin }
            }
            // A cadence, not everyday movement: the strongest peak's ±12 bpm holds at least ``acceptance`` of the
            // accelerometer's power — the bar a pulse's spectrum must pass to be acquired.
            var lobe = 0.0
            for bin in max(0, strongestBin - 12)...min(bins - 1, strongestBin + 12) { lobe += self.accPower[bin] }
            periodic = accTotal > 0 && lobe >= Self.acceptance * accTotal
            // The cadence itself: the strongest peak, when it is a peak (a posture change's spectrum falls from
            // 0 Hz, its largest in-band value at the band's lower edge, and is no cadence).
            let interior = strongestBin > 0 && strongestBin < bins - 1
                && strongest >= self.accPower[strongestBin - 1] && strongest > self.accPower[strongestBin + 1]
            cadence = periodic && interior ? Double(Self.lowestBPM + strongestBin) : nil
            for bin in 1..<(bins - 1) where motionCount < 3 {
                let p = self.accPower[bin]
                if p >= 0.1 * strongest, p >= self.accPower[bin - 1], p > self.accPower[bin + 1] {
                    self.motionPeaks[motionCount] = Double(Self.lowestBPM + bin)
                    motionCount += 1
                }
            }
            // Also a cadence below the band whose harmonic falls in it (slow arm swing), and the third harmonic: an
            // arm swinging once a stride puts it into the PPG between the step rate (its 2nd) and the step's 2nd.
            for index in 0..<motionCount {
                self.motionPeaks[motionCount + index] = 2 * self.motionPeaks[index]
                self.motionPeaks[2 * motionCount + index] = 3 * self.motionPeaks[index]
            }
            motionCount *= 3
        }
    }

    /// Whether a beat rate measured from one interval of `interval` seconds, each of its two beats placed to within
    /// `error` seconds, can lie within ``motionHalfWidth`` of the accelerometer's cadence or its second harmonic
    /// while the wrist moves periodically — the rate the arm swing's artefact produces (one pulse-like wave per swing,
    /// or two), which is no evidence of a pulse. False at rest, without ACC, and for movement that is not periodic.
    func coincidesWithCadence(interval: Double, error: Double) -> Bool {
        guard interval > error, interval.isFinite, error >= 0 else { return false }
        return self.coincidesWithCadence(from: 60 / (interval + error), to: 60 / (interval - error))
    }

    /// Whether a rate in `slowest`…`fastest` bpm lies within ``motionHalfWidth`` of the cadence or its second
    /// harmonic while the wrist moves periodically.
    func coincidesWithCadence(from slowest: Double, to fastest: Double) -> Bool {
        guard self.moving, let cadence = self.cadence else { return false }
        for k in 1...2 {
            let peak = Double(k) * cadence
            if peak + Self.motionHalfWidth >= slowest && peak - Self.motionHalfWidth <= fastest { return true }
        }
        return false
    }

    /// Takes the candidate at `bin` (of the averaged spectrum) as the track's value. With `newest`, the value
    /// published is the newest window's own strongest non-motion local maximum within ``newestPeakReach`` bpm of
    /// it, when there is one: the averaged spectrum lags a rate that moves by a window or two.
    private mutating func accept(bin: Int, concentration: Double,
                                 newest: Bool = true) -> (beatsPerMinute: Double, confidence: Double)? {
        let averaged = Self.interpolated(bin, in: self.bvpPower)
        var bpm = averaged
        if newest {
            let bins = self.candidateBins
            var best: Int?
            for b in max(1, bin - Self.newestPeakReach)...min(bins - 2, bin + Self.newestPeakReach)
            where !self.motionMask[b] && self.newestPower[b] >= self.newestPower[b - 1]
                && self.newestPower[b] > self.newestPower[b + 1] {
                if let previous = best, self.newestPower[b] <= self.newestPower[previous] { continue }
                best = b
            }
            if let best { bpm = Self.interpolated(best, in: self.newestPower) }
        }
        self.track = bpm
        self.candidate.end()
        let confidence = min(max((concentration - 0.25) / 0.5, 0), 1)
        return (bpm, confidence)
    }

    /// The rate of the peak at `bin` of `power`, interpolated between grid points (parabola through its neighbours).
    private static func interpolated(_ bin: Int, in power: [Double]) -> Double {
        var bpm = Double(Self.lowestBPM + bin)
        guard bin > 0 && bin < power.count - 1 else { return bpm }
        let a = power[bin - 1], b = power[bin], c = power[bin + 1]
        let denominator = a - 2 * b + c
        if denominator < 0 {
            let shift = 0.5 * (a - c) / denominator
            if shift.isFinite { bpm += min(max(shift, -0.5), 0.5) }
        }
        return bpm
    }

    /// Share of the non-motion power within ±12 bpm of `bin` and of its second harmonic: a pulse puts its power
    /// in both (the first difference weights the harmonic up), noise in neither.
    ///
    /// Beside the cadence (``isBesideTheCadence(_:)``) the ±4 bpm mask hides part of the candidate's own lobe: its
    /// power there is counted as the share of the window's lobe (``lobeShape``) a pulse at `bin` would show in the bins
    /// left, at most 1 / ``besideCadenceLeast`` times what is seen; not with `corrected` false.
    private func concentration(at bin: Int, clean: Double, corrected: Bool = true) -> Double {
        guard clean > 0 else { return 0 }
        let bins = self.candidateBins
        let beside = corrected && self.isBesideTheCadence(bin)
        var lobe = 0.0, seen = 0.0, whole = 0.0
        for b in max(0, bin - 12)...min(bins - 1, bin + 12) {
            let shape = self.lobeShape[abs(b - bin)]
            whole += shape
            guard !self.motionMask[b] else { continue }
            lobe += self.bvpPower[b]
            seen += shape
        }
        if beside, seen > 0, whole > 0 { lobe /= max(seen / whole, Self.besideCadenceLeast) }
        let harmonic = 2 * (Self.lowestBPM + bin) - Self.lowestBPM
        var upper = 0.0
        if harmonic - 12 < bins {
            for b in max(0, harmonic - 12)...min(bins - 1, harmonic + 12) where !self.motionMask[b] {
                upper += self.bvpPower[b]
            }
        }
        // A candidate whose own lobe is much weaker than its "harmonic" is the sub-harmonic of a peak, not a pulse:
        // a pulse's second harmonic, even weighted up by the difference, carries at most about as much as its
        // fundamental.
        if lobe < 0.4 * upper { return lobe / clean }
        return (lobe + upper) / clean
    }

    /// The fundamental `bin` is a harmonic of, or `bin` itself: a non-motion local maximum within ±2 bpm of a half or
    /// a third of its rate holding at least `1 / k²` of its power (±4 bpm each). After the first difference a pulse's
    /// k-th harmonic has k² times the power its amplitude alone would give, and a PPG's harmonics do not outgrow its
    /// fundamental, so the fundamental holds at least `1 / k²` of it; a noise peak that happens to sit there must be
    /// that large too. Repeated, so the 4th harmonic goes through the 2nd.
    private func fundamental(of bin: Int) -> Int {
        var current = bin
        for _ in 0..<2 {
            let own = self.narrowPower(at: current)
            guard own > 0 else { return current }
            var best: (bin: Int, share: Double)?
            for k in 2...3 {
                let target = Double(Self.lowestBPM + current) / Double(k) - Double(Self.lowestBPM)
                guard target >= 1 else { continue }
                let center = Int(target.rounded())
                let low = max(1, center - 2), high = min(self.candidateBins - 2, center + 2)
                guard low <= high else { continue }
                var peak: Int?
                for b in low...high where !self.motionMask[b] && self.bvpPower[b] >= self.bvpPower[b - 1]
                    && self.bvpPower[b] > self.bvpPower[b + 1] {
                    if let previous = peak, self.bvpPower[b] <= self.bvpPower[previous] { continue }
                    peak = b
                }
                guard let peak else { continue }
                let share = self.narrowPower(at: peak) / own
                if share >= 1 / Double(k * k), share > (best?.share ?? 0) { best = (peak, share) }
            }
            guard let best else { return current }
            current = best.bin
        }
        return current
    }

    /// Whether the candidate at `bin` lies within a lobe (12 bpm) plus the mask of the accelerometer's own peaks while
    /// the wrist moves periodically, and of none of the harmonics the mask adds for them. Beside a harmonic the
    /// candidate may itself be the harmonic of a pulse the cadence hides (bench/ibi/walk.py walk-cadence-hr: the heart
    /// on the cadence, its 2nd harmonic beside the cadence's); beside everyday movement that is not periodic, the
    /// correction found residue as well as pulses (round 13, Docs/ibi.md). While the track is lost it applies too
    /// (round 15), but the 4 s acquisition rule judges the uncorrected concentration: judged corrected, a no-pulse
    /// walking recording was acquired in 4 s at 0.55–0.64 beside a 106 /min cadence and published 11 s.
    ///
    /// A harmonic that is also a peak of the accelerometer's own (within the mask: an arm swinging once a stride shows
    /// the step, the swing's 2nd harmonic, as a peak) does not count against a candidate within 12 bpm of the track:
    /// there the track, not the spectrum, says which of the two the candidate is. Farther out, such a candidate could
    /// take the track over as the pulse's 2nd harmonic beside the cadence's (walking: bench/ibi/walk.py walk-65 MAE
    /// 1.00 → 4.93) or jump to it from a track 10 s old (stride-run-75: 123 → 155 with the heart at 130; round 14).
    private func isBesideTheCadence(_ bin: Int) -> Bool {
        let fundamentals = self.motionCount / 3
        guard fundamentals > 0, self.periodic else { return false }
        let bpm = Double(Self.lowestBPM + bin)
        let nearTrack = self.track.map { abs(bpm - $0) <= 12 } ?? false
        var found = false
        for index in 0..<self.motionCount where abs(self.motionPeaks[index] - bpm) <= 12 + Self.motionHalfWidth {
            if index >= fundamentals {
                guard nearTrack else { return false }
                var ownPeak = false
                for own in 0..<fundamentals
                where abs(self.motionPeaks[own] - self.motionPeaks[index]) <= Self.motionHalfWidth {
                    ownPeak = true
                }
                guard ownPeak else { return false }
            }
            found = true
        }
        return found
    }

    /// The long window's peak near `track`, bpm, or nil: beside the cadence, where the 8 s window's ±15 bpm main lobe
    /// merges the pulse with the motion, the last 16 s (main lobe ±7.5 bpm) may show the pulse as a peak of its own.
    /// The strongest non-motion local maximum within ``zoomReach`` of the track (motion: within ``zoomHalfWidth`` of
    /// the long window's accelerometer peaks and their 2nd and 3rd harmonics; a peak holding less than
    /// ``leakageRatio`` of a motion peak within 13 bpm is its leakage) whose ±``zoomLobe`` bpm hold at least
    /// ``zoomAcceptance`` of the long window's non-motion power in 40–210 bpm. Four 256-point transforms (BVP and the
    /// three ACC axes), at most once a second: in the seconds that reach this rule, or that ask whether a value in
    /// motion is borne out (``isBorneOut(_:)``).
    private mutating func zoomTrack(_ track: Double) -> Double? {
        guard self.analyseZoom() else { return nil }
        return self.zoomPeak(near: track)
    }

    /// Transforms the last 16 s of BVP and ACC and marks the long window's motion bins, once a second (the result is
    /// kept until the next ``estimate()``); false when there is not yet 16 s of signal or the BVP is flat.
    private mutating func analyseZoom() -> Bool {
        if self.zoomState != .unread { return self.zoomState == .read }
        self.zoomState = .unavailable
        guard self.bvp.total >= self.zoomSize, self.accSamples >= self.zoomSize else { return false }
        let bins = self.coefficients.count
        let energy = self.load(axis: nil, zoom: true)
        guard energy.isFinite, energy > 1e-12 else { return false }
        self.goertzel(intoACC: false, accumulate: false, zoom: true)
        for axis in 0..<3 {
            _ = self.load(axis: axis, zoom: true)
            self.goertzel(intoACC: true, accumulate: axis > 0, zoom: true)
        }
        var strongest = 0.0
        for bin in 0..<bins {
            strongest = max(strongest, self.zoomACC[bin])
            self.zoomMask[bin] = false
        }
        var found = 0
        for bin in 1..<(bins - 1) where found < 3 {
            let p = self.zoomACC[bin]
            guard p >= 0.1 * strongest, p >= self.zoomACC[bin - 1], p > self.zoomACC[bin + 1] else { continue }
            found += 1
            for k in 1...3 {
                let peak = Double(k * (Self.lowestBPM + bin))
                for b in 0..<bins where abs(Double(Self.lowestBPM + b) - peak) <= Self.zoomHalfWidth {
                    self.zoomMask[b] = true
                }
            }
        }
        var clean = 0.0
        for bin in 0..<self.candidateBins where !self.zoomMask[bin] { clean += self.zoomPower[bin] }
        guard clean > 0, clean.isFinite else { return false }
        self.zoomClean = clean
        self.zoomState = .read
        return true
    }

    /// The long window's peak of its own near `track` (see ``zoomTrack(_:)``), after ``analyseZoom()``.
    private func zoomPeak(near track: Double) -> Double? {
        let candidates = self.candidateBins
        let bins = self.coefficients.count
        var best: (bin: Int, concentration: Double)?
        for bin in 1..<(candidates - 1) where !self.zoomMask[bin] {
            let p = self.zoomPower[bin]
            guard abs(Double(Self.lowestBPM + bin) - track) <= Self.zoomReach,
                  p >= self.zoomPower[bin - 1], p > self.zoomPower[bin + 1] else { continue }
            var lobe = 0.0, motion = 0.0
            for b in max(0, bin - Self.zoomLobe)...min(candidates - 1, bin + Self.zoomLobe) where !self.zoomMask[b] {
                lobe += self.zoomPower[b]
            }
            for b in max(0, bin - 13)...min(bins - 1, bin + 13) where self.zoomMask[b] {
                motion = max(motion, self.zoomPower[b])
            }
            guard p >= Self.leakageRatio * motion else { continue }
            let c = lobe / self.zoomClean
            if c > (best?.concentration ?? -1) { best = (bin, c) }
        }
        guard let best, best.concentration >= Self.zoomAcceptance else { return nil }
        return Self.interpolated(best.bin, in: self.zoomPower)
    }

    /// Whether the long window masks a bin within ``zoomHalfWidth`` of `track`: the track is on a motion peak (the
    /// merged cadence), where the long window cannot show the pulse apart from it either.
    private func zoomMasksNear(_ track: Double) -> Bool {
        guard track.isFinite, abs(track) < 1e6 else { return false }
        let centre = Int(track.rounded()) - Self.lowestBPM
        let reach = Int(Self.zoomHalfWidth)
        let count = self.coefficients.count
        guard centre + reach >= 0, centre - reach < count else { return false }
        for bin in max(0, centre - reach)...min(count - 1, centre + reach) where self.zoomMask[bin] { return true }
        return false
    }

    /// Power within ±4 bpm of `bin`.
    private func narrowPower(at bin: Int) -> Double {
        var power = 0.0
        for b in max(0, bin - 4)...min(self.coefficients.count - 1, bin + 4) { power += self.bvpPower[b] }
        return power
    }

    /// Share of all the band's power within ±12 bpm of `bin`.
    private func concentrationTotal(at bin: Int, total: Double) -> Double {
        var lobe = 0.0
        for b in max(0, bin - 12)...min(self.candidateBins - 1, bin + 12) { lobe += self.bvpPower[b] }
        return lobe / total
    }

    /// Whether the unmasked local maximum at `bin` is only the leakage of a motion peak near it.
    private func isLeakage(_ bin: Int) -> Bool {
        guard !self.motionMask[bin] else { return false }
        var strongest = 0.0
        for b in max(0, bin - 25)...min(self.coefficients.count - 1, bin + 25) where self.motionMask[b] {
            strongest = max(strongest, self.bvpPower[b])
        }
        return self.bvpPower[bin] < Self.leakageRatio * strongest
    }

    private func variance(axis: Int) -> Double {
        var sum = 0.0, squares = 0.0
        for back in 0..<self.size {
            let v = self.acc[back: back][axis]
            sum += v
            squares += v * v
        }
        let n = Double(self.size)
        return max(squares / n - (sum / n) * (sum / n), 0)
    }

    /// Fills the scratch window with the last 8 s of BVP (`axis` nil) or of one ACC axis, mean removed and
    /// Hann-windowed; returns its energy.
    private mutating func load(axis: Int?, zoom: Bool = false) -> Double {
        let size = zoom ? self.zoomSize : self.size
        var mean = 0.0
        for back in 0..<size { mean += axis.map { self.acc[back: back][$0] } ?? self.bvp[back: back] }
        mean /= Double(size)
        var energy = 0.0
        for index in 0..<size {
            let back = size - 1 - index
            let raw = axis.map { self.acc[back: back][$0] } ?? self.bvp[back: back]
            let v = (raw - mean) * (zoom ? self.zoomHann[index] : self.hann[index])
            self.scratch[index] = v
            energy += v * v
        }
        return energy
    }

    /// Goertzel power of the scratch window at every grid frequency, into the BVP or (summed) the ACC spectrum.
    ///
    /// Four bins at a time: each bin's recurrence is a chain of dependent multiply-adds, so one bin alone waits on
    /// the floating-point latency; four independent chains fill it. Every bin's arithmetic is the same operations
    /// in the same order as one bin at a time, so the powers are bit for bit those of the plain loop.
    private mutating func goertzel(intoACC: Bool, accumulate: Bool, zoom: Bool = false) {
        let bins = self.coefficients.count
        let size = zoom ? self.zoomSize : self.size
        self.zoomStore = zoom
        // Local references (retains, no copy), so that the stores below need no access to them.
        let coefficientArray = self.coefficients, scratchArray = self.scratch
        coefficientArray.withUnsafeBufferPointer { coefficients in
            scratchArray.withUnsafeBufferPointer { scratch in
                var bin = 0
                while bin + 4 <= bins {
                    let c0 = coefficients[bin], c1 = coefficients[bin + 1]
                    let c2 = coefficients[bin + 2], c3 = coefficients[bin + 3]
                    var a1 = 0.0, a2 = 0.0, b1 = 0.0, b2 = 0.0, d1 = 0.0, d2 = 0.0, e1 = 0.0, e2 = 0.0
                    for index in 0..<size {
                        let x = scratch[index]
                        let a0 = x + c0 * a1 - a2
                        let b0 = x + c1 * b1 - b2
                        let d0 = x + c2 * d1 - d2
                        let e0 = x + c3 * e1 - e2
                        a2 = a1; a1 = a0
                        b2 = b1; b1 = b0
                        d2 = d1; d1 = d0
                        e2 = e1; e1 = e0
                    }
                    self.store(bin, Self.power(a1, a2, c0), intoACC: intoACC, accumulate: accumulate)
                    self.store(bin + 1, Self.power(b1, b2, c1), intoACC: intoACC, accumulate: accumulate)
                    self.store(bin + 2, Self.power(d1, d2, c2), intoACC: intoACC, accumulate: accumulate)
                    self.store(bin + 3, Self.power(e1, e2, c3), intoACC: intoACC, accumulate: accumulate)
                    bin += 4
                }
                while bin < bins {
                    let coefficient = coefficients[bin]
                    var s1 = 0.0, s2 = 0.0
                    for index in 0..<size {
                        let s0 = scratch[index] + coefficient * s1 - s2
                        s2 = s1
                        s1 = s0
                    }
                    self.store(bin, Self.power(s1, s2, coefficient), intoACC: intoACC, accumulate: accumulate)
                    bin += 1
                }
            }
        }
    }

    /// A Goertzel recurrence's power from its last two states.
    @inline(__always)
    private static func power(_ s1: Double, _ s2: Double, _ coefficient: Double) -> Double {
        max(s1 * s1 + s2 * s2 - coefficient * s1 * s2, 0)
    }

    @inline(__always)
    private mutating func store(_ bin: Int, _ p: Double, intoACC: Bool, accumulate: Bool) {
        if self.zoomStore {
            if intoACC {
                self.zoomACC[bin] = accumulate ? self.zoomACC[bin] + p : p
            } else {
                self.zoomPower[bin] = p
            }
        } else if intoACC {
            self.accPower[bin] = accumulate ? self.accPower[bin] + p : p
        } else {
            self.bvpPower[bin] = p
        }
    }

    /// `cos` without Foundation, for design-time use.
    static func cos(_ x: Double) -> Double {
        var x = x
        let twoPi = 2 * Double.pi
        x -= twoPi * (x / twoPi).rounded()
        var sum = 1.0, term = 1.0
        for n in 0..<24 {
            term *= -x * x / Double((2 * n + 1) * (2 * n + 2))
            sum += term
        }
        return sum
    }
}

/// Whether this second's long window has been read (``SpectralHeartRate``).
private enum ZoomState {
    case unread
    case read
    case unavailable
}
