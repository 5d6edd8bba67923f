#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A fixed-capacity single-producer, single-consumer byte ring: the event-loop thread appends frames, the writer
/// thread drains them. Allocated once; neither side allocates, locks or blocks.
///
/// Positions are byte counts since creation (they never wrap in practice: 2⁶³ bytes); the storage index is the
/// position masked by the power-of-two capacity, as in nio's `CircularBuffer`. The producer publishes with a
/// releasing store of ``tail`` after copying, the consumer frees with a releasing store of ``head`` after
/// copying out, so each side sees the other's bytes complete.
final class SpoolRing: Sendable {
    // Sendable: the storage is written only between `tail` and `head + capacity` by the producer and read only
    // between `head` and `tail` by the consumer; the atomics order those accesses.
    nonisolated(unsafe) let storage: UnsafeMutableRawPointer
    let capacity: Int
    let mask: Int
    /// Next byte the consumer reads.
    let head = Atomic<Int>(0)
    /// Next byte the producer writes.
    let tail = Atomic<Int>(0)

    /// - Parameter capacity: rounded up to a power of two, at least 64 KiB.
    init(capacity: Int) {
        var size = 1 << 16
        while size < capacity { size <<= 1 }
        self.capacity = size
        self.mask = size - 1
        self.storage = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
    }

    deinit {
        self.storage.deallocate()
    }

    /// Free bytes as the producer sees them.
    var freeBytes: Int {
        self.capacity - (self.tail.load(ordering: .relaxed) - self.head.load(ordering: .acquiring))
    }

    /// Bytes waiting for the consumer, as the consumer sees them.
    var availableBytes: Int {
        self.tail.load(ordering: .acquiring) - self.head.load(ordering: .relaxed)
    }

    /// Producer: copies `parts` in order as one entry and publishes them together.
    ///
    /// - Returns: false, copying nothing, when they do not fit.
    func push(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> Bool {
        let total = first.count + second.count
        guard total <= self.freeBytes else { return false }
        var position = self.tail.load(ordering: .relaxed)
        self.copyIn(first, at: position)
        position += first.count
        self.copyIn(second, at: position)
        position += second.count
        self.tail.store(position, ordering: .sequentiallyConsistent)
        return true
    }

    /// Consumer: copies `destination.count` bytes starting `skip` bytes past the head, without consuming them.
    func peek(into destination: UnsafeMutableRawBufferPointer, skip: Int = 0) {
        let position = self.head.load(ordering: .relaxed) + skip
        let index = position & self.mask
        let firstCount = min(destination.count, self.capacity - index)
        guard let base = destination.baseAddress else { return }
        base.copyMemory(from: self.storage + index, byteCount: firstCount)
        if firstCount < destination.count {
            (base + firstCount).copyMemory(from: self.storage, byteCount: destination.count - firstCount)
        }
    }

    /// Consumer: frees `count` bytes.
    func consume(_ count: Int) {
        self.head.store(self.head.load(ordering: .relaxed) + count, ordering: .releasing)
    }

    /// Producer: when the ring is empty, hands its pages back to the kernel (`madvise(MADV_DONTNEED)`); they come
    /// back zero-filled when next written. An outage fills the whole ring once, and without this its pages stay
    /// resident for good. Safe without a lock: the consumer reads only between head and tail, and an empty ring
    /// has nothing there until this thread pushes again.
    func discardPagesIfEmpty() {
        guard self.tail.load(ordering: .relaxed) == self.head.load(ordering: .acquiring) else { return }
        discardPages(UnsafeMutableRawBufferPointer(start: self.storage, count: self.capacity))
    }

    private func copyIn(_ bytes: UnsafeRawBufferPointer, at position: Int) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        let index = position & self.mask
        let firstCount = min(bytes.count, self.capacity - index)
        (self.storage + index).copyMemory(from: source, byteCount: firstCount)
        if firstCount < bytes.count {
            self.storage.copyMemory(from: source + firstCount, byteCount: bytes.count - firstCount)
        }
    }
}

/// Gives the whole pages inside `buffer` back to the kernel (`madvise(MADV_DONTNEED)`): their
/// contents read as zero afterwards. For scratch buffers no one is using; the partial pages at either end (shared
/// with malloc's bookkeeping) are left alone.
func discardPages(_ buffer: UnsafeMutableRawBufferPointer) {
    guard let base = buffer.baseAddress else { return }
    let count = buffer.count
    let page = max(4096, Int(sysconf(CInt(_SC_PAGESIZE))))
    let start = (Int(bitPattern: base) + page - 1) & ~(page - 1)
    let end = (Int(bitPattern: base) + count) & ~(page - 1)
    guard end > start, let aligned = UnsafeMutableRawPointer(bitPattern: start) else { return }
    _ = madvise(aligned, end - start, MADV_DONTNEED)
}
