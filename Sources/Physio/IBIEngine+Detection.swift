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

    /// Samples after an upstroke before the next may start: the shortest plausible interval, or ``earlyFraction`` of the typical
    /// interval once known, which keeps a slow heart's dicrotic notch from counting as a beat.
    var refractorySamples: Int {
        var seconds = 0.8 * self.configuration.minimumInterval
        if let typical = self.typicalInterval {
            seconds = max(seconds, 0.5 * typical)
        }
        return Int(seconds * self.rate)
    }

    /// Locates the pulse's foot and peak around the upstroke and decides whether its interval is emitted.
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
        let footTime = self.times[absolute: foot]
        return self.judge(footTime: footTime, amplitude: peakValue - footValue)
    }

    /// Applies the checks in order of cost and returns the beat with its interval or the reason it was withheld.
    mutating func judge(footTime: Double, amplitude: Double) -> DetectedBeat {
        let configuration = self.configuration
        let typicalAmplitude = self.amplitudes.median(minimumCount: 3)
        // Mild motion narrows every tolerance; strong motion (below) suppresses outright.
        let mild = self.motion.lastMildMotion + configuration.motionHoldoff >= footTime - configuration.maximumInterval
        let strictness = mild ? min(max(configuration.mildMotionStrictness, 0), 1) : 1
        var pulseOK = amplitude > 0
        if let typicalAmplitude, typicalAmplitude > 0 {
            // The band is symmetric in log space: strictness 0.5 turns (1/3, 3) into (1/√3, √3).
            let ratio = amplitude / typicalAmplitude
            let lower = Self.power(configuration.minimumAmplitudeRatio, strictness)
            let upper = Self.power(configuration.maximumAmplitudeRatio, strictness)
            pulseOK = pulseOK && ratio >= lower && ratio <= upper
        }
        self.amplitudes.append(amplitude)
        guard let previous = self.previousFootTime else {
            self.previousEmitted = nil
            self.previousFootTime = footTime
            self.previousPulseOK = pulseOK
            return DetectedBeat(time: footTime, interval: nil, suppression: .noPreviousBeat)
        }
        let interval = footTime - previous
        let typical = self.intervals.median(minimumCount: 3)
        if interval < configuration.minimumInterval || interval < Self.earlyFraction * (typical ?? 0) {
            // Too early to be the next beat: leave it out of the chain so the next real beat is measured from
            // the last real one.
            self.previousEmitted = nil
            return DetectedBeat(time: footTime, interval: nil, suppression: .implausible)
        }
        defer {
            self.previousFootTime = footTime
            self.previousPulseOK = pulseOK
        }
        let plausible = interval >= configuration.minimumInterval && interval <= configuration.maximumInterval
        if plausible {
            self.intervals.append(interval)
            self.typicalInterval = self.intervals.median(minimumCount: 3)
        }
        let previousEmitted = self.previousEmitted
        self.previousEmitted = nil
        let suppression: BeatSuppression
        if let start = self.startTime, previous - start < configuration.warmUp {
            suppression = .warmingUp
        } else if !plausible {
            suppression = .implausible
        } else if self.motion.lastMotion + configuration.motionHoldoff >= previous {
            suppression = .motion
        } else if !pulseOK || !self.previousPulseOK {
            suppression = .pulseShape
        } else if !Self.isRegular(interval, typical: typical, previous: previousEmitted,
                                  tolerance: strictness * configuration.maximumRelativeChange) {
            suppression = .irregular
        } else {
            self.previousEmitted = interval
            self.heartRate.append(interval: interval, endingAt: footTime)
            return DetectedBeat(time: footTime, interval: interval, suppression: nil)
        }
        return DetectedBeat(time: footTime, interval: nil, suppression: suppression)
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

    /// Whether `interval` is within `tolerance` of the typical interval and of the previous emitted one.
    static func isRegular(_ interval: Double, typical: Double?, previous: Double?, tolerance: Double) -> Bool {
        guard let typical, typical > 0 else { return false }
        if abs(interval - typical) > tolerance * typical { return false }
        if let previous, previous > 0, abs(interval - previous) > tolerance * previous { return false }
        return true
    }
}
