extension Spool {
    /// Applies a writer report on the loop thread.
    func handle(_ report: SpoolWriterReport) {
        switch report {
        case .durable(let sequence):
            self.state.durableSequence = sequence
        case .writeFailed(let segment, let first, let last, let bytes, let error):
            self.state.lastWriteError = "writing segment \(segment) failed: \(error)"
            let reason: SpoolDropReason = error == .noSpace ? .noSpace : .writeError
            var dropped = 0
            var sequence = first
            while sequence <= last {
                if let slot = self.slots[sequence], slot.state == .pending || slot.state == .inFlight {
                    self.forget(sequence, slot: slot)
                    dropped += 1
                }
                sequence += 1
            }
            self.state.countDrop(reason, dropped)
            if let index = self.segments.firstIndex(where: { $0.number == segment }) {
                self.segments[index].bytes -= bytes
                self.state.bytes -= bytes
            }
            self.ledgerDirty = true
            // With drop_oldest a full disk is a full spool: make room for what comes next.
            if error == .noSpace && self.options.onFull == .dropOldest && self.segments.count > 1 {
                _ = self.evictOldestSegment()
            }
            self.releaseSegments()
        case .error(let error, let what):
            self.state.lastWriteError = "\(what): \(error)"
        case .read(let result):
            self.received(result)
        }
    }
}
