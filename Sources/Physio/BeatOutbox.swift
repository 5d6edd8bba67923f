/// Judged beats waiting to be handed out, oldest first, in storage allocated once.
///
/// A beat whose interval passed every check but waits for its run to be confirmed in motion is *held*: it stays
/// here, and so do the beats after it, until the run is confirmed (the interval is emitted) or ends or the latency
/// budget runs out (it is withheld). Everything else passes through on the next sample.
struct BeatOutbox: Sendable {
    /// A queued beat; `held` while its interval waits for its run to be confirmed.
    struct Entry: Sendable {
        var beat: DetectedBeat
        var held: Bool
    }

    private var entries: [Entry]
    private var head = 0
    /// Number of queued beats.
    private(set) var count = 0

    /// - Parameter capacity: most beats queued at once. The engine holds at most its latency budget's worth of beats
    ///   (≈ 4 at 200 bpm), so a full outbox means the caller stopped handing beats out.
    init(capacity: Int) {
        let filler = Entry(beat: DetectedBeat(time: 0, interval: nil, suppression: nil), held: false)
        self.entries = [Entry](repeating: filler, count: max(capacity, 1))
    }

    var isFull: Bool { self.count == self.entries.count }

    /// The `offset`-th queued beat (0 = oldest); callers keep `offset < count`.
    subscript(offset: Int) -> Entry {
        get { self.entries[(self.head + offset) % self.entries.count] }
        set { self.entries[(self.head + offset) % self.entries.count] = newValue }
    }

    /// Queues a beat after the others; callers make room first when ``isFull``.
    mutating func append(_ entry: Entry) {
        guard !self.isFull else { return }
        self.entries[(self.head + self.count) % self.entries.count] = entry
        self.count += 1
    }

    /// Removes and returns the oldest beat.
    mutating func removeFirst() -> Entry? {
        guard self.count > 0 else { return nil }
        let entry = self.entries[self.head]
        self.head = (self.head + 1) % self.entries.count
        self.count -= 1
        return entry
    }

    /// Forgets every queued beat without releasing storage.
    mutating func removeAll() {
        self.head = 0
        self.count = 0
    }
}
