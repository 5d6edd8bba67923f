import EventLoop

extension Spool {
    /// Applies a writer report on the loop thread.
    func handle(_ report: SpoolWriterReport) {
        switch report {
        case .durable(let sequence):
            self.state.durableSequence = sequence
        case .writeFailed(let segment, let first, let last, let bytes, let error):
            self.state.lastWriteError = "writing segment \(segment) failed: \(error)"
            self.reportWriteError("writing spool segment \(SpoolDirectory.segmentName(segment)) failed: \(error); "
                                      + "\(last - first + 1) records lost")
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
            self.reportWriteError("\(what): \(error)")
        case .read(let result):
            self.received(result)
        }
    }

    /// Hands `line` to ``onWriteError``, rate-limited to one line per ``writeErrorLogInterval``.
    func reportWriteError(_ line: String) {
        guard let onWriteError = self.onWriteError else { return }
        let now = MonotonicInstant.now
        if let last = self.lastWriteErrorLine, now < last.advanced(by: Self.writeErrorLogInterval) {
            self.suppressedWriteErrors += 1
            return
        }
        let suppressed = self.suppressedWriteErrors
        self.lastWriteErrorLine = now
        self.suppressedWriteErrors = 0
        onWriteError("spool \(self.options.directory): " + line
                         + (suppressed > 0 ? " (\(suppressed) more spool write errors since the last line)" : ""))
    }
}
