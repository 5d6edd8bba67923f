import EventLoop

extension Spool {
    /// Records the broker's acknowledgement (PUBACK) of a record: it leaves the spool. Unknown or repeated ids
    /// are ignored.
    public func acknowledge(_ id: UInt64) {
        self.eventLoop.assertInEventLoop()
        guard let slot = self.slots[id], slot.state == .pending || slot.state == .inFlight else { return }
        if slot.state == .pending { self.pendingCount -= 1 }
        self.unacknowledgedCount -= 1
        if Int(slot.key) < self.pendingPerKey.count { self.pendingPerKey[Int(slot.key)] -= 1 }
        self.slots.setState(.acknowledged, of: id)
        if let index = self.segmentIndex(containing: id) { self.segments[index].unacknowledged -= 1 }
        self.state.acknowledged &+= 1
        self.ledgerDirty = true
        self.releaseSegments()
        self.scheduleLedger()
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

    /// Persists the ledger at most once per `fsync_interval_ms`, after the first change.
    func scheduleLedger() {
        guard self.ledgerTimer == nil, !self.isClosed else { return }
        let delay = Duration.milliseconds(max(self.options.fsyncIntervalMilliseconds, 10))
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
        var low = max(self.lowWatermark, self.slots.base)
        while low < self.slots.end, let slot = self.slots[low], slot.state == .acknowledged || slot.state == .absent {
            low += 1
        }
        self.lowWatermark = low
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
