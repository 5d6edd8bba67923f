extension IBIEngine {
    /// Looks for a beat the detector did not see between the beat whose foot is at `last` and `pulse`.
    ///
    /// The detector starts a pulse when the upstroke's slope crosses a fraction of recent upstrokes, so a pulse much
    /// smaller than its neighbours (a breath, a vasomotor dip, a pulse after a large one) can pass unseen, and the
    /// next interval then spans two beats. When the interval between two clean beats is twice the rhythm, the steepest
    /// upstroke around its middle is examined as a pulse in its own right: it is the missed beat when it splits the
    /// interval evenly, passes every pulse check and correlates with the template at least
    /// ``IBIConfiguration/confirmingCorrelation`` — the template confirms what the threshold could not. A dicrotic wave
    /// sits a third of the way, not midway, and a jolt rarely has a pulse's shape.
    ///
    /// - Parameters:
    ///   - last: foot time of the previous beat in the chain.
    ///   - pulse: the clean pulse just judged, ending the long interval.
    ///   - typical: the rhythm's median interval.
    ///   - context: the motion around the pulse (amplitude band and strictness as for any pulse).
    /// - Returns: the missed beat's foot time and template correlation, or `nil`.
    /// - Complexity: O(samples in one interval), once per long interval; no allocation.
    mutating func findMissedBeat(after last: Double, before pulse: PendingPulse, typical: Double,
                                 context: MotionContext) -> (time: Double, correlation: Double)?
    {
        let configuration = self.configuration
        let tolerance = configuration.maximumRelativeChange
        let span = pulse.footTime - last
        guard self.template.isSettled, typical > 0, span >= 2 * (1 - tolerance) * typical,
              span <= 2 * (1 + tolerance) * typical
        else { return nil }
        let lastIndex = pulse.footIndex - Int((span * self.rate).rounded())
        let half = Double(pulse.footIndex - lastIndex) / 2
        // The missed foot lies within the tolerance of midway; its steepest upstroke follows it by about the usual
        // foot-to-upstroke time.
        let rise = self.rises.median(minimumCount: 3) ?? 0.1
        let from = lastIndex + Int(((1 - tolerance) * half).rounded(.up))
        let through = lastIndex + Int(((1 + tolerance) * half).rounded(.down)) + Int((2 * rise * self.rate).rounded())
        let earliestFoot = lastIndex + Int(half / 2)
        guard from <= through, through < pulse.footIndex, self.slopes.contains(absolute: earliestFoot),
              self.raw.contains(absolute: earliestFoot)
        else { return nil }
        var upstroke = from
        var steepest = self.slopes[absolute: from]
        for i in from...through where self.slopes[absolute: i] > steepest {
            upstroke = i
            steepest = self.slopes[absolute: i]
        }
        guard steepest > 0 else { return nil }
        let first = max(upstroke - Int(self.footSearch * self.rate), earliestFoot)
        let peakLimit = min(upstroke + Int(0.3 * self.rate), pulse.footIndex)
        let (candidate, _) = self.makePulse(upstroke: upstroke, first: first, peakLimit: peakLimit)
        guard candidate.windowEnd < self.raw.total,
              Self.splitsEvenly(last: last, middle: candidate.footTime, next: pulse.footTime,
                                minimum: configuration.minimumInterval, tolerance: tolerance)
        else { return nil }
        let (clean, correlation) = self.assess(candidate, complete: true, strictness: context.strictness,
                                               moving: context.moving, learn: false)
        guard clean, let correlation, correlation >= configuration.confirmingCorrelation else { return nil }
        self.rises.append(candidate.rise)
        return (candidate.footTime, correlation)
    }
}
