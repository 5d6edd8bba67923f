extension IBIEngine {
    /// Fraction of the recent upstroke slope level the slope must exceed to start a pulse. Low enough for the
    /// beat-to-beat spread of upstrokes, high enough that the dicrotic notch's small rise stays below it.
    static let thresholdFraction = 0.35

    var rate: Double { self.configuration.bvpRate > 0 ? self.configuration.bvpRate : 64 }

    /// Runs the upstroke state machine for the sample at `index`.
    ///
    /// - Returns: a beat when this sample confirmed one.
    mutating func detect(slope: Double, index: Int) -> DetectedBeat? {
        // The first half second only learns the slope scale.
        if index < Int(0.5 * self.rate) {
            self.slopeLevel = max(self.slopeLevel, slope)
            return nil
        }
        switch self.phase {
        case .searching:
            // The level is a running mean of upstroke slopes; it only forgets when beats stop coming (after an
            // artefact raised it, or the pulse weakened), so the threshold does not sag toward the dicrotic wave
            // between normal beats.
            let grace = 1.5 * (self.typicalInterval ?? 1.0) * self.rate
            if Double(index - self.lastUpstrokeIndex) > grace {
                self.slopeLevel *= self.slopeDecay
            }
            let threshold = Self.thresholdFraction * self.slopeLevel
            guard slope > threshold, slope > 0, index - self.lastUpstrokeIndex >= self.refractorySamples else {
                return nil
            }
            self.phase = .rising
            self.maximumSlope = slope
            self.maximumSlopeIndex = index
            return nil
        case .rising:
            if slope > self.maximumSlope {
                self.maximumSlope = slope
                self.maximumSlopeIndex = index
            }
            let timedOut = Double(index - self.maximumSlopeIndex) > 0.3 * self.rate
            guard slope <= 0 || timedOut else { return nil }
            self.phase = .searching
            // Clamp an artefact's huge slope so one jolt does not blind the detector for seconds.
            let learned = self.slopeLevel > 0 ? min(self.maximumSlope, 2 * self.slopeLevel) : self.maximumSlope
            self.slopeLevel = 0.8 * self.slopeLevel + 0.2 * learned
            self.lastUpstrokeIndex = self.maximumSlopeIndex
            return self.confirmPulse(peakIndex: index)
        }
    }

    /// A pulse sooner than this fraction of the typical interval after the previous one is taken for an artefact
    /// (a dicrotic wave, a jolt), not a beat: sinus rhythm does not shorten by 40 % from one beat to the next.
    static let earlyFraction = 0.6

    /// Largest change of a pulse's foot-to-upstroke time, relative to recent pulses', before its foot is taken for
    /// an artefact's trough.
    static let footTolerance = 0.5

    /// Fraction of the typical interval after an upstroke during which no new pulse may start. Long enough to skip a
    /// slow heart's dicrotic wave, short enough that a detector whose typical interval doubled (it missed every
    /// other beat during an artefact) still sees the beats in between and can re-anchor on them.
    static let refractoryFraction = 0.35

    /// Samples after an upstroke before the next may start: 80 % of the shortest plausible interval, or
    /// ``refractoryFraction`` of the typical interval once known.
    var refractorySamples: Int {
        var seconds = 0.8 * self.configuration.minimumInterval
        if let typical = self.typicalInterval {
            seconds = max(seconds, Self.refractoryFraction * typical)
        }
        return Int(seconds * self.rate)
    }

    /// Locates the pulse's foot and peak around the upstroke and queues the pulse for judgement once its shape
    /// window has been sampled.
    ///
    /// - Returns: the previous pulse's beat when it was still waiting and this upstroke, a plausible next beat,
    ///   came inside its shape window: then its shape cannot be trusted.
    mutating func confirmPulse(peakIndex: Int) -> DetectedBeat? {
        let upstroke = self.maximumSlopeIndex
        var back = 0.3
        if let typical = self.typicalInterval {
            back = min(max(0.4 * typical, 0.12), 0.35)
        }
        var first = upstroke - Int(back * self.rate)
        first = max(first, self.lastPeakIndex + 1, self.raw.total - self.raw.capacity)
        guard first <= upstroke, self.raw.contains(absolute: first), self.raw.contains(absolute: peakIndex) else {
            return nil
        }
        var foot = first
        var footValue = self.raw[absolute: first]
        for i in first...upstroke where self.raw[absolute: i] < footValue {
            foot = i
            footValue = self.raw[absolute: i]
        }
        var peakValue = footValue
        var peak = upstroke
        for i in upstroke...peakIndex where self.raw[absolute: i] > peakValue {
            peak = i
            peakValue = self.raw[absolute: i]
        }
        self.lastPeakIndex = peak
        var earlier: DetectedBeat?
        if let waiting = self.pending {
            let gap = self.times[absolute: foot] - waiting.footTime
            let typical = self.typicalInterval ?? 0
            if gap < self.configuration.minimumInterval || gap < Self.earlyFraction * typical {
                // An upstroke inside the waiting pulse's shape window and too soon to be the next beat: the
                // dicrotic wave or a jolt. Ignore it and let the waiting pulse be judged on its own shape.
                return nil
            }
            self.pending = nil
            earlier = self.judge(waiting, complete: false)
        }
        // The window is anchored on the steepest upstroke, which is sharper than the foot (a flat or noisy
        // diastole moves the lowest sample around, not the upstroke).
        let window = max(Int((self.shapeWindow * self.rate).rounded()), 6)
        let start = max(upstroke - window * 5 / 10, first)
        self.pending = PendingPulse(footIndex: foot, footTime: self.times[absolute: foot],
                                    rise: Double(upstroke - foot) / self.rate,
                                    amplitude: peakValue - footValue, windowStart: start,
                                    windowEnd: start + window)
        return earlier
    }

    /// Length in seconds of the window, around the steepest upstroke, over which a pulse's shape is compared with
    /// the template: 60 % of the typical interval (the end of the previous decline, upstroke, peak and the start
    /// of the decline at any rate), within 0.25–0.6 s so that the judgement, and with it the interval, comes well
    /// inside the 1 s latency budget.
    var shapeWindow: Double {
        guard let typical = self.typicalInterval else { return 0.4 }
        return min(max(0.5 * typical, 0.25), 0.6)
    }

    /// Judges the waiting pulse once its shape window has been sampled.
    mutating func judgePendingIfComplete(index: Int) -> DetectedBeat? {
        guard let waiting = self.pending, index >= waiting.windowEnd else { return nil }
        self.pending = nil
        return self.judge(waiting, complete: true)
    }

    /// Applies the checks in order of cost and returns the beat with its interval or the reason it was withheld;
    /// `nil` when the pulse is taken for an artefact rather than a beat (too early and unlike recent pulses).
    ///
    /// - Parameters:
    ///   - pulse: the pulse to judge.
    ///   - complete: whether its whole shape window was sampled before the next upstroke.
    mutating func judge(_ pulse: PendingPulse, complete: Bool) -> DetectedBeat? {
        let configuration = self.configuration
        let footTime = pulse.footTime
        let amplitude = pulse.amplitude
        let typicalAmplitude = self.amplitudes.median(minimumCount: 3)
        // Mild motion narrows every tolerance; strong motion (below) suppresses outright.
        let mild = self.motion.lastMildMotion + configuration.motionHoldoff >= footTime - configuration.maximumInterval
        let strong = self.motion.lastMotion + configuration.motionHoldoff >= footTime - configuration.maximumInterval
        let strictness = mild ? min(max(configuration.mildMotionStrictness, 0), 1) : 1
        var amplitudeOK = amplitude > 0
        if let typicalAmplitude, typicalAmplitude > 0 {
            // The band is symmetric in log space: strictness 0.5 turns (1/3, 3) into (1/√3, √3).
            let ratio = amplitude / typicalAmplitude
            let lower = Self.power(configuration.minimumAmplitudeRatio, 1)
            let upper = Self.power(configuration.maximumAmplitudeRatio, 1)
            amplitudeOK = amplitudeOK && ratio >= lower && ratio <= upper
        }
        var correlation: Double?
        if complete, self.raw.contains(absolute: pulse.windowStart), self.raw.contains(absolute: pulse.windowEnd) {
            correlation = self.template.correlate(self.raw, from: pulse.windowStart, through: pulse.windowEnd)
        }
        let settled = self.template.isSettled
        let minimumCorrelation = 1 - (1 - configuration.minimumTemplateCorrelation) * strictness
        let shapeOK: Bool
        if !complete {
            shapeOK = false
        } else if let correlation {
            shapeOK = correlation >= minimumCorrelation
        } else {
            // Template still learning: only the amplitude speaks.
            shapeOK = !settled
        }
        // The foot sits a steady time before the steepest upstroke; an artefact that moves the trough (a jolt, a
        // swing) changes that time, while the upstroke stays put. Such a foot would give a wrong interval.
        var footOK = true
        if let typicalRise = self.rises.median(minimumCount: 3) {
            footOK = abs(pulse.rise - typicalRise) <= max(Self.footTolerance * typicalRise, 2 / self.rate)
        }
        let pulseOK = amplitudeOK && shapeOK && footOK
        if pulseOK || !settled { self.rises.append(pulse.rise) }

        var previous = self.previousFootTime
        let typical = self.intervals.median(minimumCount: 3)
        let early = previous.map {
            footTime - $0 < configuration.minimumInterval || footTime - $0 < Self.earlyFraction * (typical ?? 0)
        } ?? false
        if early {
            // Too early to be the next beat: a dicrotic wave, a jolt — or a real beat when the detector has locked
            // onto every other beat. It stays out of the chain so the next beat is measured from the last one, but
            // a clean one is remembered in case the next beat shows it was real.
            self.earlyPulse = pulseOK && settled ? footTime : nil
            return nil
        }
        if let earlyPulse = self.earlyPulse, let last = previous, pulseOK,
           Self.splitsEvenly(last: last, middle: earlyPulse, next: footTime,
                             minimum: configuration.minimumInterval, tolerance: configuration.maximumRelativeChange)
        {
            // The early pulse sat midway between two beats and looked like them: the rhythm is twice what the chain
            // believed. Measure from it, so the true interval reaches the rhythm's median.
            previous = earlyPulse
            self.previousFootTime = earlyPulse
            self.previousPulseOK = true
        }
        self.earlyPulse = nil
        let interval = previous.map { footTime - $0 }
        if !strong && complete {
            if pulseOK {
                self.template.learnLatest()
            } else if settled {
                self.template.missLatest()
            }
        }
        self.amplitudes.append(amplitude)
        guard let previous, let interval else {
            self.previousClean = nil
            self.previousFootTime = footTime
            self.previousPulseOK = pulseOK
            return DetectedBeat(time: footTime, interval: nil, suppression: .noPreviousBeat,
                                templateCorrelation: correlation)
        }
        let previousPulseOK = self.previousPulseOK
        self.previousFootTime = footTime
        self.previousPulseOK = pulseOK
        let plausible = interval >= configuration.minimumInterval && interval <= configuration.maximumInterval
        // The rhythm is learned only from pulses that look like pulses, so artefacts do not drag it around; while the
        // arm moves, only from intervals close to it, so a periodic artefact cannot pull it to its own period.
        let steady = !mild || typical.map { abs(interval - $0) <= configuration.maximumRelativeChange * $0 } ?? false
        if plausible && steady && (pulseOK || !settled) && (previousPulseOK || !settled) {
            self.intervals.append(interval)
            self.typicalInterval = self.intervals.median(minimumCount: 3)
        }
        let previousClean = self.previousClean
        self.previousClean = nil
        let suppression: BeatSuppression
        if let start = self.startTime, previous - start < configuration.warmUp {
            suppression = .warmingUp
        } else if !plausible {
            suppression = .implausible
        } else if self.motion.lastMotion + configuration.motionHoldoff >= previous {
            suppression = .motion
        } else if !pulseOK || !previousPulseOK {
            suppression = .pulseShape
        } else if !Self.isRegular(interval, typical: typical, previous: previousClean,
                                  tolerance: strictness * configuration.maximumRelativeChange) {
            suppression = .irregular
        } else {
            self.previousClean = interval
            self.cleanRun += 1
            if mild && self.cleanRun < configuration.motionConfirmations {
                // While the arm moves, a clean-looking interval is trusted only once a few in a row agree: an
                // artefact can pass every check once, rarely several times running.
                return DetectedBeat(time: footTime, interval: nil, suppression: .unconfirmed,
                                    templateCorrelation: correlation)
            }
            self.heartRate.append(interval: interval, endingAt: footTime)
            return DetectedBeat(time: footTime, interval: interval, suppression: nil, templateCorrelation: correlation)
        }
        self.cleanRun = 0
        return DetectedBeat(time: footTime, interval: nil, suppression: suppression, templateCorrelation: correlation)
    }

    /// `base` raised to `exponent` in [0, 1] by a few square roots — enough precision for a tolerance band, without
    /// Foundation's `pow`.
    static func power(_ base: Double, _ exponent: Double) -> Double {
        guard base > 0 else { return base }
        if exponent >= 1 { return base }
        if exponent <= 0 { return 1 }
        // Binary expansion of the exponent over successive square roots.
        var result = 1.0
        var root = base
        var remaining = exponent
        var weight = 1.0
        for _ in 0..<20 {
            root = root.squareRoot()
            weight *= 0.5
            if remaining >= weight {
                result *= root
                remaining -= weight
            }
        }
        return result
    }

    /// Whether `middle` splits `last`…`next` into two plausible intervals within `tolerance` of each other, as a
    /// real beat does between its neighbours and a dicrotic wave (about a third of the way) does not.
    static func splitsEvenly(last: Double, middle: Double, next: Double, minimum: Double, tolerance: Double) -> Bool {
        let first = middle - last
        let second = next - middle
        guard first >= minimum, second >= minimum else { return false }
        return abs(first - second) <= tolerance * 0.5 * (first + second)
    }

    /// Whether `interval` is within `tolerance` of the typical interval and of the previous emitted one.
    static func isRegular(_ interval: Double, typical: Double?, previous: Double?, tolerance: Double) -> Bool {
        guard let typical, typical > 0 else { return false }
        if abs(interval - typical) > tolerance * typical { return false }
        if let previous, previous > 0, abs(interval - previous) > tolerance * previous { return false }
        return true
    }
}
