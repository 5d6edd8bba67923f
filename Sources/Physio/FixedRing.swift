/// A fixed-capacity ring of the most recent values, allocated once.
///
/// The engine keeps a few seconds of history per stream; a ring whose storage is allocated in `init` and then only
/// overwritten keeps the per-sample path free of allocation (SPEC §8). Capacity is a power of two so that
/// wrapping is a mask, as in nio's `CircularBuffer`.
struct FixedRing<Element: BitwiseCopyable>: Sendable where Element: Sendable {
    private var storage: [Element]
    private let mask: Int
    /// Number of values ever appended since the last ``removeAll()``; the newest has index `total - 1`.
    private(set) var total: Int = 0

    /// - Parameters:
    ///   - minimumCapacity: at least this many values are retained (rounded up to a power of two).
    ///   - filler: the value unused slots hold.
    init(minimumCapacity: Int, filler: Element) {
        var capacity = 1
        while capacity < max(minimumCapacity, 1) { capacity <<= 1 }
        self.storage = [Element](repeating: filler, count: capacity)
        self.mask = capacity - 1
    }

    /// How many of the most recent values are retained.
    var capacity: Int { self.mask + 1 }

    /// Number of values currently readable.
    var count: Int { min(self.total, self.capacity) }

    /// Appends a value, overwriting the oldest one when full.
    mutating func append(_ value: Element) {
        self.storage[self.total & self.mask] = value
        self.total &+= 1
    }

    /// Whether the absolute index `index` (counted since the last ``removeAll()``) is still retained.
    func contains(absolute index: Int) -> Bool {
        index >= 0 && index < self.total && index >= self.total - self.capacity
    }

    /// The value at absolute index `index`; callers check ``contains(absolute:)`` first.
    subscript(absolute index: Int) -> Element {
        self.storage[index & self.mask]
    }

    /// The `back`-th most recent value (0 = newest); callers keep `back < count`.
    subscript(back back: Int) -> Element {
        self.storage[(self.total - 1 - back) & self.mask]
    }

    /// Forgets every value without releasing storage.
    mutating func removeAll() {
        self.total = 0
    }
}
