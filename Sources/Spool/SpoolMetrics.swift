/// The spool's counters, a plain value read on the loop thread (``Spool/metrics``) for the metrics topic and
/// `empalinkctl status`.
public struct SpoolMetrics: Equatable, Sendable {
    /// Bytes of framed records in the spool (on disk or on their way there), the figure `max_bytes` bounds.
    public var bytes = 0
    /// Records not yet acknowledged.
    public var records = 0
    /// Records appended since start.
    public var appended: UInt64 = 0
    /// Records acknowledged since start.
    public var acknowledged: UInt64 = 0
    /// Records handed out by ``Spool/nextForReplay(limit:now:)`` since start.
    public var replayed: UInt64 = 0
    /// Dropped records per ``SpoolDropReason`` (indexed by its raw value).
    public var droppedByReason = [UInt64](repeating: 0, count: SpoolDropReason.allCases.count)
    /// When the oldest unacknowledged segment's first record was appended, microseconds since 1970; `nil` when
    /// nothing is pending.
    public var oldestTimestamp: Int64?
    /// The highest sequence number known to be on stable storage.
    public var durableSequence: UInt64?
    /// Segment files.
    public var segments = 0
    /// Bytes lost at recovery (corrupt regions and torn tails).
    public var recoveryLostBytes = 0
    /// `ENOSPC` results from writes, syncs and the ledger.
    public var noSpaceErrors: UInt64 = 0
    /// `EIO` results.
    public var ioErrors: UInt64 = 0
    /// Any other write-side error.
    public var otherWriteErrors: UInt64 = 0
    /// The last write-side error's text, for the log and status; `nil` before the first.
    public var lastWriteError: String?
    /// `fsync(2)` calls by the writer (segments, directory, ledger).
    public var fsyncs: UInt64 = 0
    /// Group commits: rounds of syncing that made appended records durable.
    public var commits: UInt64 = 0
    /// Group commits skipped because everything written was already acknowledged.
    public var skippedCommits: UInt64 = 0
    /// Bytes the writer wrote to segment files.
    public var bytesWritten: UInt64 = 0

    /// Every dropped record, whatever the reason.
    public var dropped: UInt64 { self.droppedByReason.reduce(0, +) }

    /// The count for one reason.
    public func dropped(_ reason: SpoolDropReason) -> UInt64 { self.droppedByReason[reason.rawValue] }

    mutating func countDrop(_ reason: SpoolDropReason, _ count: Int = 1) {
        self.droppedByReason[reason.rawValue] &+= UInt64(count)
    }
}
