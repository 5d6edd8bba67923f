extension IBIEngine {
    /// Fraction of the recent upstroke slope level the slope must exceed to start a pulse. Low enough for the
    /// beat-to-beat spread of upstrokes, high enough that the dicrotic notch's small rise stays below it.
    static let thresholdFraction = 0.35

    /// A trough is the samples within this fraction of the pulse's amplitude above its lowest one: above the sample
    /// noise of a clean pulse, far below the rise of its upstroke.
    static let troughBand = 0.03

    /// Seconds a trough must last to count as flat (see ``makePulse(upstroke:first:peakLimit:)``): more than 3 samples
    /// at 64 Hz. A sharp trough — the E4's usual V, where Empatica's IBIs sit on the lowest sample — keeps its lowest
    /// sample as the foot.
    static let flatSpan = 0.05

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
        var first = upstroke - Int(self.footSearch * self.rate)
        first = max(first, self.lastPeakIndex + 1, self.raw.total - self.raw.capacity)
        guard first <= upstroke, self.raw.contains(absolute: first), self.raw.contains(absolute: peakIndex) else {
            return nil
        }
        let (pulse, peak) = self.makePulse(upstroke: upstroke, first: first, peakLimit: peakIndex)
        self.lastPeakIndex = peak
        var earlier: DetectedBeat?
        if let waiting = self.pending {
            let gap = pulse.footTime - waiting.footTime
            let typical = self.typicalInterval ?? 0
            if gap < self.configuration.minimumInterval || gap < Self.earlyFraction * typical {
                // An upstroke inside the waiting pulse's shape window and too soon to be the next beat: the
                // dicrotic wave or a jolt. Ignore it and let the waiting pulse be judged on its own shape.
                return nil
            }
            self.pending = nil
            earlier = self.judge(waiting, complete: false)
        }
        self.pending = pulse
        return earlier
    }

    /// Seconds before the steepest upstroke in which the foot is sought: long enough for the slowest upstroke at the
    /// rhythm, short enough not to reach back into the previous pulse's decline.
    var footSearch: Double {
        guard let typical = self.typicalInterval else { return 0.3 }
        return min(max(0.4 * typical, 0.12), 0.35)
    }

    /// The pulse whose steepest upstroke is at `upstroke`: its foot is the lowest raw sample from `first` to the
    /// upstroke — or, when the signal stays within ``troughBand`` of the amplitude above it for more than ``flatSpan``
    /// after it (a flat trough), the last such sample before the upstroke; its peak is the highest sample from the
    /// upstroke through `peakLimit`, and its shape window is centred on the upstroke (see ``shapeWindow``). Callers check that `first` and `peakLimit` are still in the ring.
    ///
    /// - Returns: the pulse and the absolute index of its peak.
    func makePulse(upstroke: Int, first: Int, peakLimit: Int) -> (pulse: PendingPulse, peak: Int) {
        var foot = first
        var footValue = self.raw[absolute: first]
        for i in first...upstroke where self.raw[absolute: i] < footValue {
            foot = i
            footValue = self.raw[absolute: i]
        }
        var peakValue = footValue
        var peak = upstroke
        for i in upstroke...max(peakLimit, upstroke) where self.raw[absolute: i] > peakValue {
            peak = i
            peakValue = self.raw[absolute: i]
        }
        // In a flat trough noise decides which sample is lowest, anywhere in a span of 100 ms or more (issue 24: an
        // interval 0.1 s short on clean data). There the foot is where the pulse leaves the trough: the last sample
        // before the upstroke still in it.
        let trough = footValue + Self.troughBand * (peakValue - footValue)
        var leaves = foot
        for i in foot...upstroke where self.raw[absolute: i] <= trough {
            leaves = i
        }
        if Double(leaves - foot) > Self.flatSpan * self.rate { foot = leaves }
        // The window is anchored on the steepest upstroke, which is sharper than the foot (a flat or noisy
        // diastole moves the lowest sample around, not the upstroke).
        let window = max(Int((self.shapeWindow * self.rate).rounded()), 6)
        let start = max(upstroke - window * 5 / 10, first)
        let pulse = PendingPulse(footIndex: foot, footTime: self.times[absolute: foot],
                                 rise: Double(upstroke - foot) / self.rate, amplitude: peakValue - footValue,
                                 windowStart: start, windowEnd: start + window)
        return (pulse, peak)
    }

    /// Length in seconds of the window, centred on the steepest upstroke, over which a pulse's shape is compared
    /// with the template: half the typical interval (the end of the previous decline, the foot, the upstroke and the
    /// peak at any rate), within 0.25–0.6 s so that the judgement, and with it the interval, comes at most 0.3 s
    /// after the upstroke, well inside the 1 s latency budget.
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
}
