import EventLoop

extension Spool {
    /// Records the broker's acknowledgement (PUBACK) of a record: it leaves the spool. Unknown or repeated ids
    /// are ignored.
    public func acknowledge(_ id: UInt64) {
        self.eventLoop.assertInEventLoop()
        guard let slot = self.slots[id], slot.state == .pending || slot.state == .inFlight else { return }
        if slot.state == .pending {
            self.pendingCount -= 1
            if Int(slot.key) < self.replayPendingPerKey.count { self.replayPendingPerKey[Int(slot.key)] -= 1 }
        }
        self.unacknowledgedCount -= 1
        if Int(slot.key) < self.pendingPerKey.count { self.pendingPerKey[Int(slot.key)] -= 1 }
        self.slots.setState(.acknowledged, of: id)
        if let index = self.segmentIndex(containing: id) { self.segments[index].unacknowledged -= 1 }
        self.state.acknowledged &+= 1
        self.advanceLowWatermark()
        self.ledgerDirty = true
        self.releaseSegments()
        self.scheduleLedger()
    }

    /// Moves the low watermark past acknowledged and gone records and tells the writer, so that it can skip
    /// commits that would protect only acknowledged data. Amortised O(1) per acknowledgement.
    func advanceLowWatermark() {
        var low = max(self.lowWatermark, self.slots.base)
        while low < self.slots.end, let slot = self.slots[low], slot.state == .acknowledged || slot.state == .absent {
            low += 1
        }
        self.lowWatermark = low
        self.writer.acknowledgedBelow.store(low, ordering: .relaxed)
    }

    /// Deletes the oldest segments while they are fully acknowledged and not the active one.
    func releaseSegments() {
        var released = false
        while self.segments.count > 1, let oldest = self.segments.first, oldest.unacknowledged == 0 {
            self.segments.removeFirst()
            self.state.bytes -= oldest.bytes
            self.writer.post { $0.deleteSegments.append(oldest.number) }
            released = true
        }
        if released { self.trimSlots() }
    }

    /// Acknowledgements are persisted at most once per this many `fsync_interval_ms`.
    ///
    /// Each ledger write costs two `fsync`s (file and directory). Losing the last few seconds of acknowledgements
    /// to a power cut only means those records are sent again (at-least-once), so the ledger is written less
    /// often than data is committed: with the defaults, while acknowledgements flow, 1 data commit per second
    /// plus one ledger write per 5 s.
    static let ledgerIntervalMultiple = 5

    /// Persists the ledger at most once per ``ledgerIntervalMultiple`` × `fsync_interval_ms`, after the first
    /// change; ``close()`` and ``synchronize()`` persist it at once.
    func scheduleLedger() {
        guard self.ledgerTimer == nil, !self.isClosed else { return }
        let delay = Duration.milliseconds(max(self.options.fsyncIntervalMilliseconds * Self.ledgerIntervalMultiple, 10))
        self.ledgerTimer = try? self.eventLoop.scheduleTimer(after: delay) { [weak self] in
            guard let self else { return }
            self.ledgerTimer = nil
            self.sendLedger()
        }
    }

    /// Hands the writer a snapshot of the acknowledgement state, if it changed.
    func sendLedger() {
        guard self.ledgerDirty else { return }
        self.ledgerDirty = false
        let ledger = self.ledgerSnapshot()
        self.writer.post { $0.ledger = ledger }
    }

    /// Everything below the oldest unacknowledged record, plus the resolved (acknowledged or gone) records above
    /// it, as far as ``SpoolLedger/maxListed`` allows.
    func ledgerSnapshot() -> SpoolLedger {
        self.advanceLowWatermark()
        let low = self.lowWatermark
        var ledger = SpoolLedger(acknowledgedBelow: low, nextSequence: self.nextSequence)
        var sequence = low
        while sequence < self.slots.end && ledger.acknowledged.count < SpoolLedger.maxListed {
            if let slot = self.slots[sequence], slot.state == .acknowledged || slot.state == .absent {
                ledger.acknowledged.append(sequence)
            }
            sequence += 1
        }
        return ledger
    }
}
