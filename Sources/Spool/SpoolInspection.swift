#if canImport(Glibc)
import Glibc
#endif
import Posix

/// A read-only look at a spool directory for `empalinkctl spool inspect|verify`: every segment scanned and
/// every CRC checked, the ledger read, nothing changed (no truncation), so it is safe next to a running agent.
public struct SpoolInspection: Equatable, Sendable {
    /// One segment file.
    public struct Segment: Equatable, Sendable {
        public var number: UInt64
        public var bytes: Int
        public var records: Int
        public var firstSequence: UInt64?
        public var lastSequence: UInt64?
        /// Bytes in no valid record.
        public var lostBytes: Int
        /// Corrupt regions, the torn tail included.
        public var damagedRegions: Int
        /// Unreadable (`EIO`, permissions, too large) or not a regular file with one link (a planted link).
        public var unreadable: Bool
    }

    public var directory: String
    public var segments: [Segment] = []
    public var cursor = SpoolRecoveryReport.CursorState.missing
    /// Why the cursor is unreadable (``SpoolRecoveryReport/cursorProblem``).
    public var cursorProblem: String?
    public var ledger: SpoolLedger?
    public var records = 0
    /// Valid records the ledger does not mark acknowledged.
    public var pending = 0
    public var bytes = 0
    public var lostBytes = 0
    public var damagedRegions = 0
    /// Sequence numbers neither found nor accounted for by the ledger (see ``SpoolRecoveryReport/missingRecords``).
    public var missingRecords: UInt64 = 0
    /// The first and last valid record.
    public var oldest: RecordPosition?
    public var newest: RecordPosition?
    /// Records per stream key, in first-seen order.
    public var streams: [StreamCount] = []

    /// A record's sequence number and append time (microseconds since 1970).
    public struct RecordPosition: Equatable, Sendable {
        public var sequence: UInt64
        public var timestamp: Int64
    }

    public struct StreamCount: Equatable, Sendable {
        public var key: String
        public var records: Int
    }

    /// Whether any CRC failed, any byte was lost, a segment is unreadable, records are missing, or the ledger is
    /// corrupt.
    public var isDamaged: Bool {
        self.lostBytes > 0 || self.missingRecords > 0 || self.segments.contains(where: \.unreadable)
            || self.cursor == .corrupt || self.cursor == .unreadable
    }

    /// Scans `directory`.
    ///
    /// - Throws: ``Errno`` when the directory cannot be listed.
    public static func inspect(directory: String) throws(Errno) -> SpoolInspection {
        var inspection = SpoolInspection(directory: directory)
        switch SpoolLedger.read(directory: directory) {
        case .valid(let ledger):
            inspection.cursor = .valid
            inspection.ledger = ledger
        case .missing: inspection.cursor = .missing
        case .corrupt: inspection.cursor = .corrupt
        case .unreadable(let why):
            inspection.cursor = .unreadable
            inspection.cursorProblem = why
        }
        let ledger = inspection.ledger ?? SpoolLedger()
        var streamIndex: [String: Int] = [:]
        var previous: UInt64?
        for number in try SpoolDirectory.segmentNumbers(in: directory) {
            var segment = Segment(
                number: number, bytes: 0, records: 0, firstSequence: nil, lastSequence: nil, lostBytes: 0,
                damagedRegions: 0, unreadable: false
            )
            let bytes: [UInt8]
            do throws(Errno) {
                // As recovery: never follow a planted link or read a FIFO or device (it would be skipped there).
                let fd = try FileDescriptor.open(SpoolDirectory.segmentPath(directory, number),
                                                 flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
                defer { fd.close() }
                let status = try fd.status()
                guard status.kind == .regular, status.links == 1 else { throw Errno(rawValue: EINVAL) }
                bytes = try fd.readToEnd(limit: SpoolRecovery.maxSegmentFileSize)
            } catch {
                segment.unreadable = true
                inspection.segments.append(segment)
                continue
            }
            segment.bytes = bytes.count
            bytes.withUnsafeBytes { raw in
                let scan = SpoolScan.scan(raw)
                segment.lostBytes = scan.lostBytes
                segment.damagedRegions = scan.damaged.count + (scan.tail == nil ? 0 : 1)
                for header in scan.records {
                    // Out of order or out of range (as recovery skips them).
                    if header.sequence > SpoolLedger.maximumSequence { continue }
                    if let last = previous, header.sequence <= last { continue }
                    let expected = previous.map { $0 + 1 } ?? (inspection.cursor == .valid ? 0 : header.sequence)
                    inspection.missingRecords += SpoolRecovery.unresolved(
                        from: expected, to: header.sequence, ledger: ledger
                    )
                    previous = header.sequence
                    segment.records += 1
                    if segment.firstSequence == nil { segment.firstSequence = header.sequence }
                    segment.lastSequence = header.sequence
                    if !ledger.isAcknowledged(header.sequence) || inspection.cursor != .valid {
                        inspection.pending += 1
                    }
                    let position = RecordPosition(sequence: header.sequence, timestamp: header.timestamp)
                    if inspection.oldest == nil { inspection.oldest = position }
                    inspection.newest = position
                    let key = String(decoding: raw[header.keyRange], as: UTF8.self)
                    if let index = streamIndex[key] {
                        inspection.streams[index].records += 1
                    } else {
                        streamIndex[key] = inspection.streams.count
                        inspection.streams.append(StreamCount(key: key, records: 1))
                    }
                }
            }
            inspection.records += segment.records
            inspection.bytes += segment.bytes
            inspection.lostBytes += segment.lostBytes
            inspection.damagedRegions += segment.damagedRegions
            inspection.segments.append(segment)
        }
        if inspection.cursor == .valid {
            inspection.missingRecords += SpoolRecovery.unresolved(
                from: previous.map { $0 + 1 } ?? 0, to: ledger.nextSequence, ledger: ledger
            )
        }
        return inspection
    }
}
