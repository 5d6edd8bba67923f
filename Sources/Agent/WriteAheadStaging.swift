#if canImport(Glibc)
import Glibc
#endif

/// `always` mode's messages between their append to the spool and their live publish: the spool's writer puts a
/// record into its segment file within microseconds, and only then is it published, so that a message the broker
/// may have seen is always on disk too (`kill -9` loses nothing, SPEC §11).
///
/// A FIFO of (spool id, NUL-terminated topic, payload) copies in storage allocated once; it empties at every
/// writer round, and then starts again at the front of its buffer. When it is full the caller spools the message
/// for replay instead (counted by the spool as an ordinary pending record). Loop thread only.
final class WriteAheadStaging {
    struct Entry {
        var id: UInt64
        var topicOffset: Int
        var payloadOffset: Int
        var payloadCount: Int
    }

    let bytes: UnsafeMutableRawBufferPointer
    let entries: UnsafeMutableBufferPointer<Entry>
    private(set) var head = 0
    private(set) var count = 0
    private var used = 0

    init(byteCapacity: Int = 256 << 10, entryCapacity: Int = 1024) {
        self.bytes = .allocate(byteCount: max(byteCapacity, 64), alignment: 8)
        self.entries = .allocate(capacity: max(entryCapacity, 1))
    }

    deinit {
        self.bytes.deallocate()
        self.entries.deallocate()
    }

    var isEmpty: Bool { self.head == self.count }

    /// The oldest entry's id.
    var firstID: UInt64? { self.isEmpty ? nil : self.entries[self.head].id }

    /// Copies one message in.
    ///
    /// - Returns: `false` when it does not fit (the caller spools it for replay).
    func push(id: UInt64, topic: UnsafePointer<CChar>, payload: UnsafeRawBufferPointer) -> Bool {
        let topicCount = strlen(topic) + 1
        guard self.count < self.entries.count, self.used + topicCount + payload.count <= self.bytes.count,
              let base = self.bytes.baseAddress
        else { return false }
        let topicOffset = self.used
        (base + topicOffset).copyMemory(from: topic, byteCount: topicCount)
        let payloadOffset = topicOffset + topicCount
        if let source = payload.baseAddress, payload.count > 0 {
            (base + payloadOffset).copyMemory(from: source, byteCount: payload.count)
        }
        self.used = payloadOffset + payload.count
        self.entries[self.count] = Entry(id: id, topicOffset: topicOffset, payloadOffset: payloadOffset,
                                         payloadCount: payload.count)
        self.count += 1
        return true
    }

    /// Calls `body` with the oldest entry's id, topic and payload (valid during the call).
    func withFirst<R>(_ body: (UInt64, UnsafePointer<CChar>, UnsafeRawBufferPointer) -> R) -> R? {
        guard !self.isEmpty, let base = self.bytes.baseAddress else { return nil }
        let entry = self.entries[self.head]
        let topic = (base + entry.topicOffset).assumingMemoryBound(to: CChar.self)
        let payload = UnsafeRawBufferPointer(start: base + entry.payloadOffset, count: entry.payloadCount)
        return body(entry.id, UnsafePointer(topic), payload)
    }

    /// Removes the oldest entry; the buffer starts over once the last one is gone.
    func removeFirst() {
        guard !self.isEmpty else { return }
        self.head += 1
        if self.head == self.count { self.removeAll() }
    }

    func removeAll() {
        self.head = 0
        self.count = 0
        self.used = 0
    }
}
