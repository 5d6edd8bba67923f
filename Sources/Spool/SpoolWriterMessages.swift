import Posix

/// Work the loop hands the writer thread besides records (which travel through the ring).
struct SpoolWriterCommands: Sendable {
    /// Segment files to delete: fully acknowledged, or evicted by `on_full = "drop_oldest"`.
    var deleteSegments: [UInt64] = []
    /// The newest acknowledgement snapshot, written at the next commit.
    var ledger: SpoolLedger?
    /// A replay read-ahead request.
    var read: SpoolReadRequest?
    /// Drain, commit and write the ledger now, then signal the waiting thread.
    var syncRequested = false
    /// Hand the write and read buffers' pages and the thread's freed malloc memory back to the kernel.
    var releaseMemory = false
    var stop = false

    var isEmpty: Bool {
        self.deleteSegments.isEmpty && self.ledger == nil && self.read == nil && !self.syncRequested && !self.stop
            && !self.releaseMemory
    }
}

/// "Read up to `maxRecords` records with sequence numbers from `fromSequence` on, starting in `segment`."
struct SpoolReadRequest: Equatable, Sendable {
    var generation: UInt64
    var fromSequence: UInt64
    var segment: UInt64
    var maxRecords: Int
    var maxBytes: Int
}

/// The records a ``SpoolReadRequest`` found.
struct SpoolReadResult: Sendable {
    var generation: UInt64
    var fromSequence: UInt64
    /// In sequence order; `key` is filled in by the loop, which knows each record's key.
    var records: [SpoolRecord]
    /// Every record up to this sequence number that is on disk and intact was returned: a pending record in
    /// `fromSequence...scannedThrough` that is missing from ``records`` is gone.
    var scannedThrough: UInt64?
    /// Bytes that failed validation while reading (damage after recovery).
    var corruptBytes: Int
}

/// What the writer thread tells the loop, through `EventLoop.execute`.
enum SpoolWriterReport: Sendable {
    /// Every record up to this sequence number is on stable storage.
    case durable(throughSequence: UInt64)
    /// A batch could not be written; its records are gone.
    case writeFailed(segment: UInt64, firstSequence: UInt64, lastSequence: UInt64, bytes: Int, error: Errno)
    /// A sync, ledger or delete failed; nothing was dropped by it, but durability may be lower than promised.
    case error(Errno, String)
    case read(SpoolReadResult)
}
