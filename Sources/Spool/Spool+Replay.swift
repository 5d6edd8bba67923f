#if canImport(Glibc)
import Glibc
#endif
import CLinux
import EventLoop

extension Spool {
    /// Hands out pending records to publish, oldest first, at most `replay_rate` per second; each becomes in
    /// flight until ``acknowledge(_:)`` or ``rewindReplay()``.
    ///
    /// Records come from a read-ahead that the writer thread fills from disk; when it runs low this call asks
    /// for more and returns what is buffered (possibly nothing). ``onReplayReady`` fires when more arrives.
    /// Call it from a timer while the broker is connected, e.g. every 100 ms.
    ///
    /// - Parameters:
    ///   - limit: the most records wanted now (e.g. the free part of the in-flight window).
    ///   - now: the clock for the rate limit (a parameter so that tests can drive it).
    public func nextForReplay(limit: Int, now: MonotonicInstant = .now) -> [SpoolRecord] {
        self.eventLoop.assertInEventLoop()
        guard !self.isClosed else { return [] }
        self.refillTokens(now: now)
        let allowed = min(limit, Int(self.tokens))
        var records: [SpoolRecord] = []
        while records.count < allowed && self.readAheadHead < self.readAhead.count {
            var record = self.readAhead[self.readAheadHead]
            self.readAheadHead += 1
            guard let slot = self.slots[record.id], slot.state == .pending else { continue }
            record.key = SpoolStreamKey(index: slot.key)
            self.slots.setState(.inFlight, of: record.id)
            self.pendingCount -= 1
            if Int(slot.key) < self.replayPendingPerKey.count { self.replayPendingPerKey[Int(slot.key)] -= 1 }
            records.append(record)
        }
        self.compactReadAhead()
        self.tokens -= Double(records.count)
        self.state.replayed &+= UInt64(records.count)
        self.requestReadAheadIfNeeded()
        return records
    }

    /// Makes every in-flight record pending again and restarts replay from the oldest: call it when the broker
    /// connection is lost, since in-flight messages may never be acknowledged. Duplicates that result are what
    /// at-least-once delivery allows.
    public func rewindReplay() {
        self.eventLoop.assertInEventLoop()
        var sequence = self.slots.base
        while sequence < self.slots.end {
            if let slot = self.slots[sequence], slot.state == .inFlight {
                self.slots.setState(.pending, of: sequence)
                self.pendingCount += 1
                if Int(slot.key) < self.replayPendingPerKey.count { self.replayPendingPerKey[Int(slot.key)] += 1 }
            }
            sequence += 1
        }
        self.readAhead.removeAll(keepingCapacity: true)
        self.readAheadHead = 0
        self.replayNext = self.slots.base
        self.readGeneration &+= 1  // an outstanding read's result is now stale
        self.readOutstanding = false
    }

    /// Drops the records already handed out from the front of the read-ahead, keeping its capacity.
    ///
    /// Read-ahead arrives while records are still buffered, so the array is rarely empty when a batch is taken:
    /// waiting for it to empty (as this once did) kept every record of a replay, with its topic and message, until
    /// the backlog was drained, about 1.65 bytes of memory per spooled byte (issue 23). Compacting once the
    /// consumed prefix reaches a read-ahead's worth bounds it at about three read-aheads whatever the backlog.
    ///
    /// - Complexity: O(buffered records), at most once per ``readAheadRecords`` records handed out.
    func compactReadAhead() {
        if self.readAheadHead == self.readAhead.count {
            self.readAhead.removeAll(keepingCapacity: true)
            self.readAheadHead = 0
        } else if self.readAheadHead >= Self.readAheadRecords {
            self.readAhead.removeFirst(self.readAheadHead)
            self.readAheadHead = 0
        }
    }

    /// Hands memory freed since the last call back to the system: after recovery, and when a replay has drained
    /// the spool. `malloc_trim(0)` (every malloc arena, the writer thread's included), the ring's pages when it is
    /// empty, and the writer's 1 MiB write and read buffers (on the writer thread, between its rounds).
    ///
    /// A replay allocates each record's topic and message on the writer thread and frees them on the loop; glibc
    /// keeps the freed chunks in the writer's arena and the main heap, so without this the process stays at its
    /// peak for good. Costs a walk of the free lists (well under a millisecond here): never call it per record.
    public func releaseFreedMemory() {
        self.eventLoop.assertInEventLoop()
        guard !self.isClosed else { return }
        self.ring.discardPagesIfEmpty()
        self.writer.post { $0.releaseMemory = true }
        _ = clinux_malloc_trim(0)
    }

    func refillTokens(now: MonotonicInstant) {
        let rate = Double(self.options.replayRate)
        let capacity = max(1, rate / 10)  // at most 100 ms of burst, so no window of 1 s exceeds the rate by much
        if let last = self.lastRefill, last < now {
            let elapsed = Double(now.nanoseconds - last.nanoseconds) / 1e9
            self.tokens = min(capacity, self.tokens + elapsed * rate)
        }
        if self.lastRefill.map({ $0 < now }) ?? true { self.lastRefill = now }
    }

    /// Asks the writer for the next records when the read-ahead runs low and pending records remain.
    func requestReadAheadIfNeeded() {
        guard !self.readOutstanding, self.pendingCount > 0,
              self.readAhead.count - self.readAheadHead < Self.readAheadRecords / 2
        else { return }
        var sequence = max(self.replayNext, self.slots.base)
        while sequence < self.slots.end, self.slots[sequence]?.state != .pending { sequence += 1 }
        guard sequence < self.slots.end, let index = self.segmentIndex(containing: sequence) else {
            // Everything from the cursor on is in flight or gone; replay restarts after a rewind.
            return
        }
        self.replayNext = sequence
        self.readOutstanding = true
        let request = SpoolReadRequest(
            generation: self.readGeneration, fromSequence: sequence, segment: self.segments[index].number,
            maxRecords: Self.readAheadRecords, maxBytes: Self.readAheadBytes
        )
        self.writer.post { $0.read = request }
    }

    /// Takes a read-ahead result from the writer.
    func received(_ result: SpoolReadResult) {
        guard result.generation == self.readGeneration else { return }
        self.readOutstanding = false
        var delivered = false
        var returned = result.records.startIndex
        if let through = result.scannedThrough, through >= result.fromSequence {
            // Pending records in the scanned range that did not come back are gone (damaged after recovery).
            var sequence = result.fromSequence
            while sequence <= through && sequence < self.slots.end {
                while returned < result.records.endIndex && result.records[returned].id < sequence {
                    returned += 1
                }
                let found = returned < result.records.endIndex && result.records[returned].id == sequence
                if !found, let slot = self.slots[sequence], slot.state == .pending {
                    self.forget(sequence, slot: slot)
                    self.state.countDrop(.corrupt)
                }
                sequence += 1
            }
            self.replayNext = max(self.replayNext, through + 1)
        }
        for record in result.records where self.slots[record.id]?.state == .pending {
            self.readAhead.append(record)
            delivered = true
        }
        if delivered { self.onReplayReady?() }
        self.releaseSegments()
    }
}
