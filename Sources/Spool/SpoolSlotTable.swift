/// The loop's per-record state, indexed by sequence number: a power-of-two ring of 4-byte slots that grows by
/// doubling (so steady state allocates nothing) and is trimmed from the front as segments leave.
struct SpoolSlotTable: ~Copyable {
    enum State: UInt8 {
        /// Gone: dropped, lost, or never written.
        case absent = 0
        /// Waiting for replay.
        case pending = 1
        /// Handed to the broker (live in `always` mode, or by replay), waiting for its PUBACK.
        case inFlight = 2
        case acknowledged = 3
    }

    struct Slot {
        var state: State
        var key: UInt16
    }

    private var storage: UnsafeMutablePointer<Slot>
    private var capacity: Int
    private var start = 0
    /// The sequence number of the first slot.
    private(set) var base: UInt64
    private(set) var count = 0

    init(base: UInt64, capacity: Int = 1 << 12) {
        var size = 16
        while size < capacity { size <<= 1 }
        self.capacity = size
        self.storage = .allocate(capacity: size)
        self.base = base
    }

    deinit {
        self.storage.deallocate()
    }

    /// One past the last sequence number in the table.
    var end: UInt64 { self.base + UInt64(self.count) }

    /// The slot of `sequence`, or `nil` outside the table.
    subscript(sequence: UInt64) -> Slot? {
        guard sequence >= self.base, sequence < self.end else { return nil }
        return self.storage[(self.start + Int(sequence - self.base)) & (self.capacity - 1)]
    }

    /// Sets the state of `sequence`; ignored outside the table.
    mutating func setState(_ state: State, of sequence: UInt64) {
        guard sequence >= self.base, sequence < self.end else { return }
        self.storage[(self.start + Int(sequence - self.base)) & (self.capacity - 1)].state = state
    }

    /// Appends the slot for sequence number ``end``.
    mutating func append(_ slot: Slot) {
        if self.count == self.capacity { self.grow() }
        self.storage[(self.start + self.count) & (self.capacity - 1)] = slot
        self.count += 1
    }

    /// Drops every slot below `sequence`.
    mutating func removeBelow(_ sequence: UInt64) {
        guard sequence > self.base else { return }
        let removed = Int(min(sequence, self.end) - self.base)
        self.start = (self.start + removed) & (self.capacity - 1)
        self.count -= removed
        self.base += UInt64(removed)
        if self.count == 0 { self.base = sequence }
    }

    private mutating func grow() {
        let larger = UnsafeMutablePointer<Slot>.allocate(capacity: self.capacity * 2)
        for index in 0..<self.count {
            larger[index] = self.storage[(self.start + index) & (self.capacity - 1)]
        }
        self.storage.deallocate()
        self.storage = larger
        self.capacity *= 2
        self.start = 0
    }
}
