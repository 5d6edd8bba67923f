extension IBIEngine {
    /// Applies the checks in order of cost and returns the beat with its interval or the reason it was withheld;
    /// `nil` when the pulse is taken for an artefact rather than a beat (too early and unlike recent pulses). A beat
    /// held for confirmation comes back as ``BeatSuppression/unconfirmed`` (``BeatSuppression/motion`` in strong
    /// motion) with its interval still attached, for ``enqueue(_:now:)`` to emit or withhold once its run is decided.
    ///
    /// - Parameters:
    ///   - pulse: the pulse to judge.
    ///   - complete: whether its whole shape window was sampled before the next upstroke.
    mutating func judge(_ pulse: PendingPulse, complete: Bool) -> DetectedBeat? {
        let configuration = self.configuration
        let footTime = pulse.footTime
        // Any wrist motion asks for confirmed runs and a pulse amplitude like recent ones; mild motion also narrows
        // the tolerances; in strong motion the template does not learn and no missed beat is sought.
        let since = footTime - configuration.maximumInterval - configuration.motionHoldoff
        let moving = self.motion.lastMovement >= since
        let mild = self.motion.lastMildMotion >= since
        let strong = self.motion.lastMotion >= since
        let strictness = mild ? min(max(configuration.mildMotionStrictness, 0), 1) : 1
        let (pulseOK, correlation) = self.assess(pulse, complete: complete, strictness: strictness,
                                                 moving: moving)
        let settled = self.template.isSettled

        let previous = self.previousFootTime
        let typical = self.intervals.median(minimumCount: 3)
        let early = previous.map {
            footTime - $0 < configuration.minimumInterval || footTime - $0 < Self.earlyFraction * (typical ?? 0)
        } ?? false
        // At rest a clean pulse too early after an unclean beat may take its place (``replacesLastBeat``); while the
        // wrist moves, two such pulses can both be an artefact's, and the engine asks for confirmed runs instead.
        if early && (moving || !self.replacesLastBeat(footTime: footTime, pulseOK: pulseOK && complete,
                                                      correlation: correlation))
        {
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
            self.previousFootTime = earlyPulse
            self.previousPulseOK = true
        }
        self.earlyPulse = nil
        // While the signal settles after a gap its feet and shape are off (see ``IBIConfiguration/settlingAfterGap``):
        // nothing is learned from it.
        if !strong && complete && footTime >= self.settledAfter {
            if pulseOK {
                self.template.learnLatest()
            } else if settled {
                self.template.missLatest()
            }
        }
        self.amplitudes.append(pulse.amplitude)
        let context = MotionContext(moving: moving, mild: mild, strictness: strictness)
        if let last = self.previousFootTime, pulseOK, complete, !strong, let typical,
           let missed = self.findMissedBeat(after: last, before: pulse, typical: typical, context: context)
        {
            // The detector let a small beat pass between two clean ones (see ``findMissedBeat``). Link it into the
            // chain so the next interval is measured from it; its own interval is judged like any other when it can
            // still be emitted within the latency budget.
            if self.lastTime - missed.time <= configuration.maximumLatency {
                let beat = self.link(footTime: missed.time, pulseOK: true, correlation: missed.correlation,
                                     context: context)
                self.enqueue(beat, now: self.lastTime)
            } else {
                self.previousFootTime = missed.time
                self.previousPulseOK = true
                self.previousClean = nil
                self.previousPair = nil
            }
        }
        return self.link(footTime: footTime, pulseOK: pulseOK, correlation: correlation, context: context)
    }

    /// Adds a beat to the chain after ``previousFootTime`` and decides whether its interval is emitted.
    ///
    /// - Parameters:
    ///   - footTime: the beat's foot.
    ///   - pulseOK: whether its pulse is clean.
    ///   - correlation: its correlation with the template, reported with the beat.
    ///   - context: the motion around it.
    /// - Returns: the beat with its interval, held for confirmation, or with the reason it was withheld.
    mutating func link(footTime: Double, pulseOK: Bool, correlation: Double?, context: MotionContext) -> DetectedBeat {
        let configuration = self.configuration
        let settled = self.template.isSettled
        let typical = self.intervals.median(minimumCount: 3)
        let moving = context.moving
        let strictness = context.strictness
        guard let previous = self.previousFootTime else {
            self.chainBeforeLast = nil
            self.previousClean = nil
            self.previousPair = nil
            self.previousFootTime = footTime
            self.previousPulseOK = pulseOK
            return DetectedBeat(time: footTime, interval: nil, suppression: .noPreviousBeat,
                                templateCorrelation: correlation)
        }
        self.chainBeforeLast = ChainState(footTime: previous, pulseOK: self.previousPulseOK,
                                          previousClean: self.previousClean, previousPair: self.previousPair,
                                          cleanRun: self.cleanRun)
        let interval = footTime - previous
        let previousPulseOK = self.previousPulseOK
        self.previousFootTime = footTime
        self.previousPulseOK = pulseOK
        let plausible = interval >= configuration.minimumInterval && interval <= configuration.maximumInterval
        // The rhythm is learned only from pulses that look like pulses, so artefacts do not drag it around; while the
        // arm moves, only from intervals close to it, so a periodic artefact cannot pull it to its own period; not
        // while the signal settles after a gap.
        let steady = !context.mild
            || typical.map { abs(interval - $0) <= configuration.maximumRelativeChange * $0 } ?? false
        let clean = (pulseOK || !settled) && (previousPulseOK || !settled)
        if plausible && steady && clean && previous >= self.settledAfter {
            self.intervals.append(interval)
            self.typicalInterval = self.intervals.median(minimumCount: 3)
        }
        let previousClean = self.previousClean
        self.previousClean = nil
        let previousPair = self.previousPair
        self.previousPair = plausible && pulseOK && previousPulseOK ? interval : nil
        let tolerance = strictness * configuration.maximumRelativeChange
        let suppression: BeatSuppression
        if let start = self.startTime, previous - start < configuration.warmUp || previous < self.settledAfter {
            suppression = .warmingUp
        } else if !plausible {
            suppression = .implausible
        } else if !pulseOK || !previousPulseOK {
            suppression = .pulseShape
        } else if !Self.isRegular(interval, typical: typical, previous: previousClean, tolerance: tolerance)
            && !Self.followsRhythm(interval, typical: typical, previous: previousPair, tolerance: tolerance,
                                   shift: strictness * configuration.maximumRhythmShift)
        {
            suppression = .irregular
        } else if !moving && !self.presence.isPresent(at: footTime) {
            // No pulse in the PPG at rest: sensor noise without skin contact, whose upstrokes pass the lax checks
            // above (``PulsePresence``).
            suppression = .noPulse
        } else if self.motion.lastMildMotion >= previous
            && self.spectral.coincidesWithCadence(interval: interval, error: 2 / self.sampleRate)
        {
            // The arm swing's rate, not (necessarily) the heart's: a periodic artefact shaped like a pulse passes
            // every check above, the template learns it in mild motion, and four in a row would confirm it (off the
            // wrist, walking: intervals and a beat-derived heart rate at confidence 1 with no pulse at all). Each
            // foot is placed to within about two samples, hence the interval's error. Only while the arm keeps moving
            // during the interval (mild motion, ``IBIConfiguration/mildMotionThreshold``, 0.1 g over a second: a
            // swing is several times that in every second): after one jolt the 8 s ACC window can look periodic at
            // 40–70 /min for seconds while the wrist is still again (e4-stresspredict S06), and its beats are real.
            suppression = .cadence
        } else {
            self.previousClean = interval
            self.cleanRun += 1
            // Strong motion around the interval: its start within the hold-off after it.
            let strong = self.motion.lastMotion + configuration.motionHoldoff >= previous
            if (moving || strong) && self.cleanRun < configuration.motionConfirmations {
                // While the arm moves, a clean-looking interval is trusted only once a few in a row agree: an
                // artefact can pass every check once, rarely several times running. It is held, not dropped: the
                // run that confirms it within the latency budget emits it too. Strong motion does not withhold an
                // interval outright: a pulse that stays clean through it (a sensor pressed firmly to the wrist) is
                // as good as any, and confirmation is what tells it from an artefact.
                return DetectedBeat(time: footTime, interval: interval, suppression: strong ? .motion : .unconfirmed,
                                    templateCorrelation: correlation)
            }
            return DetectedBeat(time: footTime, interval: interval, suppression: nil, templateCorrelation: correlation)
        }
        self.cleanRun = 0
        return DetectedBeat(time: footTime, interval: nil, suppression: suppression, templateCorrelation: correlation)
    }

    /// Whether the pulse at `footTime`, too early to follow the chain's last beat, takes that beat's place; if so, the
    /// chain is put back as it was before that beat joined, and the pulse is judged as the beat after it.
    ///
    /// A pulse-like wave that is not a beat — a late diastolic wave of a slow heart, a vasomotor or contact bump —
    /// can cross the slope threshold a few tenths of a second before the real upstroke; the real pulse is then too
    /// early to follow it and would be dropped, and the false one becomes the chain's beat (e4-stresspredict S01,
    /// ≈ 65 bpm: a pulse correlating −0.6 to +0.05 with the template 0.3–0.47 s before Empatica's beat). When the last beat
    /// failed the pulse checks and this one is shaped like the template (``IBIConfiguration/confirmingCorrelation``,
    /// the bar for a pulse with little else to speak for it) and is a plausible next beat after the one before, the
    /// pulse is the beat: of two candidates for one beat, the one that looks like a pulse. Only at rest (the caller
    /// checks): while the wrist moves, an unclean pulse and a well-shaped one after it can both be an artefact's.
    ///
    /// - Parameters:
    ///   - footTime: the early pulse's foot.
    ///   - pulseOK: whether it is clean (its whole shape window sampled).
    ///   - correlation: its correlation with the template.
    /// - Returns: whether it replaced the last beat.
    mutating func replacesLastBeat(footTime: Double, pulseOK: Bool, correlation: Double?) -> Bool {
        let configuration = self.configuration
        guard !self.previousPulseOK, pulseOK, self.template.isSettled, let correlation,
              correlation >= configuration.confirmingCorrelation, let chain = self.chainBeforeLast
        else { return false }
        let typical = self.intervals.median(minimumCount: 3) ?? 0
        let interval = footTime - chain.footTime
        guard interval >= configuration.minimumInterval, interval >= Self.earlyFraction * typical else { return false }
        self.previousFootTime = chain.footTime
        self.previousPulseOK = chain.pulseOK
        self.previousClean = chain.previousClean
        self.previousPair = chain.previousPair
        self.cleanRun = chain.cleanRun
        self.chainBeforeLast = nil
        self.earlyPulse = nil
        return true
    }

    /// Whether `middle` splits `last`…`next` into two plausible intervals within `tolerance` of each other, as a
    /// real beat does between its neighbours and a dicrotic wave (about a third of the way) does not.
    static func splitsEvenly(last: Double, middle: Double, next: Double, minimum: Double, tolerance: Double) -> Bool {
        let first = middle - last
        let second = next - middle
        guard first >= minimum, second >= minimum else { return false }
        return abs(first - second) <= tolerance * 0.5 * (first + second)
    }

    /// Whether `interval` continues a rhythm that is changing beat by beat: within `tolerance` of the previous interval
    /// between two clean pulses and within `shift` of the typical interval. A breath or a vagal slowing moves the
    /// rhythm like that, by a few percent per beat, past the typical interval's tolerance; a missed or extra beat
    /// changes the interval by half or more at once and fails both.
    static func followsRhythm(_ interval: Double, typical: Double?, previous: Double?, tolerance: Double,
                              shift: Double) -> Bool
    {
        guard let typical, typical > 0, let previous, previous > 0 else { return false }
        return abs(interval - previous) <= tolerance * previous && abs(interval - typical) <= shift * typical
    }

    /// Whether `interval` is within `tolerance` of the typical interval and of the previous emitted one.
    static func isRegular(_ interval: Double, typical: Double?, previous: Double?, tolerance: Double) -> Bool {
        guard let typical, typical > 0 else { return false }
        if abs(interval - typical) > tolerance * typical { return false }
        if let previous, previous > 0, abs(interval - previous) > tolerance * previous { return false }
        return true
    }
}
