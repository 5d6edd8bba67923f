extension IBIEngine {
    /// Largest change of a pulse's foot-to-upstroke time, relative to that of recent pulses (at least 2 samples),
    /// before its foot is taken for an artefact's trough while the wrist moves. Sampling alone moves the foot by a
    /// sample (16 ms at 64 Hz, 10–20 % of a usual rise); a trough that an arm movement shifts moves by more.
    static let footTolerance = 0.25

    /// Whether a pulse looks like recent clean pulses: shape correlated with their template and, while the wrist moves,
    /// amplitude within their band, shape closer still to the template and foot at their usual distance before the
    /// upstroke. Learns the foot distance from clean pulses.
    ///
    /// - Parameters:
    ///   - pulse: the pulse.
    ///   - complete: whether its shape window was sampled before the next upstroke; if not, its shape is unknown.
    ///   - strictness: 1 at rest, less in mild motion: the correlation must come that much closer to 1.
    ///   - moving: whether the wrist moved (``IBIConfiguration/movementThreshold``). Only then must the amplitude be in
    ///     the band of recent pulses, the correlation reach ``IBIConfiguration/confirmingCorrelation`` and the foot sit
    ///     where it usually does: at rest nothing but physiology (vasomotion, breathing, a change of contact pressure)
    ///     swings the amplitude or moves the trough — Empatica's own IBIs include pulses 4–10 × or ¼ × their
    ///     neighbours', and its fiducial is the trough wherever it lies — while in motion an artefact can pass the
    ///     everyday shape check and these are its marks.
    ///   - learn: whether a clean pulse's foot-to-upstroke time joins the reference (not for a candidate that has
    ///     further checks to pass).
    /// - Returns: whether the pulse is clean, and its correlation with the template when there was one to compare.
    mutating func assess(_ pulse: PendingPulse, complete: Bool, strictness: Double, moving: Bool,
                         learn: Bool = true) -> (Bool, Double?)
    {
        let configuration = self.configuration
        var amplitudeOK = pulse.amplitude > 0
        if moving, let typicalAmplitude = self.amplitudes.median(minimumCount: 3), typicalAmplitude > 0 {
            let ratio = pulse.amplitude / typicalAmplitude
            amplitudeOK = amplitudeOK && ratio >= configuration.minimumAmplitudeRatio
                && ratio <= configuration.maximumAmplitudeRatio
        }
        var correlation: Double?
        if complete, self.raw.contains(absolute: pulse.windowStart), self.raw.contains(absolute: pulse.windowEnd) {
            correlation = self.template.correlate(self.raw, from: pulse.windowStart, through: pulse.windowEnd)
        }
        let settled = self.template.isSettled
        var minimumCorrelation = 1 - (1 - configuration.minimumTemplateCorrelation) * strictness
        if moving { minimumCorrelation = max(minimumCorrelation, configuration.confirmingCorrelation) }
        let shapeOK: Bool
        if !complete {
            shapeOK = false
        } else if let correlation {
            shapeOK = correlation >= minimumCorrelation
        } else {
            // Template still learning: only the amplitude and the foot speak.
            shapeOK = !settled
        }
        // The foot sits a steady time before the steepest upstroke; an artefact that moves the trough (a jolt, a
        // swing) changes that time, while the upstroke stays put. Such a foot would give a wrong interval.
        var footOK = true
        if moving, let typicalRise = self.rises.median(minimumCount: 3) {
            footOK = abs(pulse.rise - typicalRise) <= max(Self.footTolerance * typicalRise, 2 / self.rate)
        }
        let pulseOK = amplitudeOK && shapeOK && footOK
        if learn && (pulseOK || !settled) { self.rises.append(pulse.rise) }
        return (pulseOK, correlation)
    }
}
