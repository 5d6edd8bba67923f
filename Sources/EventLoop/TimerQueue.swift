/// The loop's timers: a binary min-heap of deadlines over one `timerfd`.
///
/// One `timerfd` armed at the earliest deadline, rather than one `timerfd` per timer, because the daemon keeps
/// dozens of short-lived timers (libdbus method-call timeouts, batch flushes, per-device backoff, connection
/// timeouts, the watchdog): scheduling or cancelling one is then O(log n) in memory plus at most one
/// `timerfd_settime`, with no descriptor churn, no `epoll_ctl`, and no risk of running out of descriptors.
/// When the queue is empty the `timerfd` is disarmed, so an idle loop never wakes up.
///
/// Cancellation is lazy: a cancelled timer leaves its heap entry behind, skipped when it reaches the top, and
/// the heap is compacted when such dead entries outnumber the live ones.
struct TimerQueue {
    /// One heap entry; ordered by deadline, then by scheduling order, so equal deadlines fire first-in first-out.
    struct Entry {
        var deadline: UInt64
        var sequence: UInt64
        var id: UInt64

        func precedes(_ other: Entry) -> Bool {
            self.deadline != other.deadline ? self.deadline < other.deadline : self.sequence < other.sequence
        }
    }

    /// A live timer's handler and period.
    final class Record {
        let handler: () -> Void
        /// Nanoseconds between firings; 0 for a one-shot timer.
        let interval: UInt64

        init(handler: @escaping () -> Void, interval: UInt64) {
            self.handler = handler
            self.interval = interval
        }
    }

    private(set) var heap: [Entry] = []
    private(set) var records: [UInt64: Record] = [:]
    private var nextID: UInt64 = 1
    /// The sequence number the next pushed entry gets.
    private(set) var nextSequence: UInt64 = 0

    init() {
        self.heap.reserveCapacity(64)
        self.records.reserveCapacity(64)
    }

    /// Live timers (scheduled and not yet fired or cancelled).
    var count: Int { self.records.count }

    /// The earliest live deadline, after dropping cancelled entries from the top.
    mutating func earliestDeadline() -> UInt64? {
        while let top = self.heap.first, self.records[top.id] == nil {
            self.popTop()
        }
        return self.heap.first?.deadline
    }

    /// Adds a timer and returns its identifier.
    mutating func schedule(deadline: UInt64, interval: UInt64, handler: @escaping () -> Void) -> UInt64 {
        let id = self.nextID
        self.nextID += 1
        self.records[id] = Record(handler: handler, interval: interval)
        self.push(deadline: deadline, id: id)
        return id
    }

    /// Removes a timer. Returns whether it was still pending.
    mutating func cancel(id: UInt64) -> Bool {
        guard self.records.removeValue(forKey: id) != nil else { return false }
        if self.heap.count > 64 && self.heap.count > 2 * self.records.count {
            self.compact()
        }
        return true
    }

    /// Removes and returns the next timer due at `now` that was scheduled before `sequenceLimit`, re-queueing it
    /// first when it repeats, so that its handler may cancel it.
    ///
    /// A repeating timer keeps its phase (`deadline + k × interval`), but periods missed while the loop was busy
    /// are skipped rather than fired in a burst.
    mutating func popDue(now: UInt64, sequenceLimit: UInt64) -> Record? {
        while let top = self.heap.first, top.deadline <= now, top.sequence < sequenceLimit {
            self.popTop()
            guard let record = self.records[top.id] else { continue }
            if record.interval > 0 {
                var next = top.deadline &+ record.interval
                if next <= now {
                    let missed = (now - top.deadline) / record.interval
                    next = top.deadline &+ (missed + 1) &* record.interval
                }
                self.push(deadline: next, id: top.id)
            } else {
                self.records.removeValue(forKey: top.id)
            }
            return record
        }
        return nil
    }

    /// Drops every timer.
    mutating func removeAll() {
        self.heap.removeAll()
        self.records.removeAll()
    }

    private mutating func push(deadline: UInt64, id: UInt64) {
        self.heap.append(Entry(deadline: deadline, sequence: self.nextSequence, id: id))
        self.nextSequence += 1
        self.siftUp(self.heap.count - 1)
    }

    private mutating func popTop() {
        let last = self.heap.removeLast()
        if !self.heap.isEmpty {
            self.heap[0] = last
            self.siftDown(0)
        }
    }

    private mutating func compact() {
        let records = self.records
        self.heap.removeAll { records[$0.id] == nil }
        var index = self.heap.count / 2
        while index > 0 {
            index -= 1
            self.siftDown(index)
        }
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        let entry = self.heap[child]
        while child > 0 {
            let parent = (child - 1) / 2
            guard entry.precedes(self.heap[parent]) else { break }
            self.heap[child] = self.heap[parent]
            child = parent
        }
        self.heap[child] = entry
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        let entry = self.heap[parent]
        let count = self.heap.count
        while true {
            let left = 2 * parent + 1
            guard left < count else { break }
            let right = left + 1
            let child = right < count && self.heap[right].precedes(self.heap[left]) ? right : left
            guard self.heap[child].precedes(entry) else { break }
            self.heap[parent] = self.heap[child]
            parent = child
        }
        self.heap[parent] = entry
    }
}
