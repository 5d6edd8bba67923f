extension IBIEngine {
    /// Queues a judged beat for ``appendBVP(_:at:)`` to hand out.
    ///
    /// A beat held for confirmation (``BeatSuppression/unconfirmed`` or, in strong motion, ``BeatSuppression/motion``,
    /// with its interval still attached) waits. The next
    /// beat decides the held ones: one that completes the run emits them too, as long as their foot lies within
    /// ``IBIConfiguration/maximumLatency`` of `now` — the interval is emitted as soon as its run confirms it, and never
    /// later than the latency budget; any other beat ends the run and withholds them.
    ///
    /// - Parameters:
    ///   - beat: the judged beat.
    ///   - now: time of the BVP sample being processed.
    mutating func enqueue(_ beat: DetectedBeat, now: Double) {
        let held = (beat.suppression == .unconfirmed || beat.suppression == .motion) && beat.interval != nil
        if !held {
            let confirms = beat.suppression == nil && beat.interval != nil
            for offset in 0..<self.outbox.count where self.outbox[offset].held {
                var entry = self.outbox[offset]
                entry.held = false
                if confirms, let interval = entry.beat.interval,
                   now - entry.beat.time <= self.configuration.maximumLatency
                {
                    entry.beat.suppression = nil
                    self.heartRate.append(interval: interval, endingAt: entry.beat.time)
                } else {
                    entry.beat.interval = nil
                }
                self.outbox[offset] = entry
            }
            if confirms, let interval = beat.interval {
                self.heartRate.append(interval: interval, endingAt: beat.time)
            }
        }
        if self.outbox.isFull {
            // Cannot happen while a beat is handed out per sample (beats are ≥ 0.28 s apart); if it did, the oldest
            // would be given up rather than memory grown.
            _ = self.outbox.removeFirst()
        }
        self.outbox.append(BeatOutbox.Entry(beat: beat, held: held))
    }

    /// Hands out the oldest queued beat once it is decided; a held beat whose latency budget has run out is handed
    /// out withheld.
    mutating func dequeue(now: Double) -> DetectedBeat? {
        guard self.outbox.count > 0 else { return nil }
        let oldest = self.outbox[0]
        if oldest.held && now - oldest.beat.time <= self.configuration.maximumLatency {
            return nil
        }
        guard var entry = self.outbox.removeFirst() else { return nil }
        if entry.held { entry.beat.interval = nil }
        return entry.beat
    }

    /// Withholds every held interval: the run they waited on can no longer be confirmed (a gap restarted the chain).
    mutating func withholdHeld() {
        for offset in 0..<self.outbox.count where self.outbox[offset].held {
            var entry = self.outbox[offset]
            entry.held = false
            entry.beat.interval = nil
            self.outbox[offset] = entry
        }
    }
}
