/// What recovery found when the spool opened: reported in the log and by `empalinkctl spool inspect`.
public struct SpoolRecoveryReport: Equatable, Sendable {
    /// The state the ledger (`cursor`) was in.
    public enum CursorState: String, Equatable, Sendable {
        case valid
        case missing
        /// Invalid contents: treated as "nothing acknowledged", so everything is replayed again.
        case corrupt
        /// Cannot be read, or not a regular file (``cursorProblem`` says why): treated like ``corrupt``.
        case unreadable
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
    /// Segment names that are not regular files with one link (symbolic links, hard links, directories, …), as
    /// "NAME (what it is)": not written by the spool, so skipped and left alone, never truncated or deleted.
    public var skippedFiles: [String] = []
    /// Fully acknowledged segments deleted at start.
    public var deletedSegments = 0
    public var cursor = CursorState.missing
    /// Why the cursor is ``CursorState/unreadable``, e.g. "Permission denied" or "a directory, not a file".
    public var cursorProblem: String?

    /// Whether anything was lost or damaged.
    public var isDamaged: Bool {
        self.lostBytes > 0 || self.missingSegments > 0 || self.missingRecords > 0 || self.unreadableSegments > 0
            || self.cursor == .corrupt || self.cursor == .unreadable || !self.skippedFiles.isEmpty
    }

    /// One line for the log.
    public var summary: String {
        var text = "\(self.segments) segments, \(self.records) records (\(self.pendingRecords) pending), "
            + "\(self.bytes) bytes; cursor \(self.cursor.rawValue)"
            + (self.cursorProblem.map { " (\($0))" } ?? "")
        if self.lostBytes > 0 {
            text += "; lost \(self.lostBytes) bytes in \(self.corruptRegions) corrupt regions"
                + " (\(self.truncatedBytes) truncated)"
        }
        if self.missingSegments > 0 { text += "; \(self.missingSegments) segments missing" }
        if self.missingRecords > 0 { text += "; up to \(self.missingRecords) records missing" }
        if self.unreadableSegments > 0 { text += "; \(self.unreadableSegments) segments unreadable" }
        if !self.skippedFiles.isEmpty {
            let listed = self.skippedFiles.prefix(4).joined(separator: ", ")
                + (self.skippedFiles.count > 4 ? ", …" : "")
            text += "; \(self.skippedFiles.count) not regular files, left alone: \(listed)"
        }
        return text
    }
}
