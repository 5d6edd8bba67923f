/// What recovery found when the spool opened: reported in the log and by `empalinkctl spool inspect`.
public struct SpoolRecoveryReport: Equatable, Sendable {
    /// The state the ledger (`cursor`) was in.
    public enum CursorState: String, Equatable, Sendable {
        case valid
        case missing
        /// Unreadable or invalid: treated as "nothing acknowledged", so everything is replayed again.
        case corrupt
    }

    /// Segment files found.
    public var segments = 0
    /// Valid records found.
    public var records = 0
    /// Of them, not acknowledged: to be replayed.
    public var pendingRecords = 0
    /// Bytes of the segments after recovery.
    public var bytes = 0
    /// Bytes that belong to no valid record (corrupt regions plus torn tails).
    public var lostBytes = 0
    /// Of ``lostBytes``, the tails cut off the segments' ends.
    public var truncatedBytes = 0
    /// Corrupt regions skipped inside segments.
    public var corruptRegions = 0
    /// Gaps in the segment numbering: segment files that are gone.
    public var missingSegments = 0
    /// Sequence numbers neither found nor acknowledged: an upper bound on records lost with missing segments
    /// and corrupt regions (it also counts records dropped at run time before the restart).
    public var missingRecords: UInt64 = 0
    /// Segment files that could not be read (`EIO`, …) and were left alone.
    public var unreadableSegments = 0
    /// Fully acknowledged segments deleted at start.
    public var deletedSegments = 0
    public var cursor = CursorState.missing

    /// Whether anything was lost or damaged.
    public var isDamaged: Bool {
        self.lostBytes > 0 || self.missingSegments > 0 || self.missingRecords > 0 || self.unreadableSegments > 0
            || self.cursor == .corrupt
    }

    /// One line for the log.
    public var summary: String {
        var text = "\(self.segments) segments, \(self.records) records (\(self.pendingRecords) pending), "
            + "\(self.bytes) bytes; cursor \(self.cursor.rawValue)"
        if self.lostBytes > 0 {
            text += "; lost \(self.lostBytes) bytes in \(self.corruptRegions) corrupt regions"
                + " (\(self.truncatedBytes) truncated)"
        }
        if self.missingSegments > 0 { text += "; \(self.missingSegments) segments missing" }
        if self.missingRecords > 0 { text += "; up to \(self.missingRecords) records missing" }
        if self.unreadableSegments > 0 { text += "; \(self.unreadableSegments) segments unreadable" }
        return text
    }
}
