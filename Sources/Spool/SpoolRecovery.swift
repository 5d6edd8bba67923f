#if canImport(Glibc)
import Glibc
#endif
import Posix

/// Recovery at open: reads every segment, checks every record's CRC, truncates torn tails, skips corrupt regions,
/// applies the ledger, and deletes segments with nothing left to deliver.
///
/// Runs on the opening thread before the writer starts, so it may block on the disk. Never traps on what it
/// reads: every damaged byte is counted in the ``SpoolRecoveryReport``.
struct SpoolRecovery {
    struct Record {
        var sequence: UInt64
        var key: UInt16
        var acknowledged: Bool
    }

    var report = SpoolRecoveryReport()
    /// Segments kept (with records to deliver), ascending.
    var segments: [SpoolSegmentInfo] = []
    /// Records of the kept segments, ascending.
    var records: [Record] = []
    /// Stream keys found, indexed by ``Record/key``.
    var keys: [String] = []
    var nextSequence: UInt64 = 0
    var nextSegment: UInt64 = 1
    /// The highest sequence number on disk (for the writer's read-ahead bound).
    var lastSequence: UInt64?

    /// The most bytes one segment file may have to be read at all: larger is not ours.
    static let maxSegmentFileSize = 1 << 30

    static func run(directory: String) throws(SpoolError) -> SpoolRecovery {
        var recovery = SpoolRecovery()
        try Self.makeDirectories(directory)
        try? FileSystem.removeFile(directory + "/" + SpoolLedger.temporaryName)
        let ledger: SpoolLedger
        switch SpoolLedger.read(directory: directory) {
        case .valid(let valid):
            ledger = valid
            recovery.report.cursor = .valid
        case .missing:
            ledger = SpoolLedger()
            recovery.report.cursor = .missing
        case .corrupt:
            ledger = SpoolLedger()
            recovery.report.cursor = .corrupt
        case .unreadable(let why):
            ledger = SpoolLedger()
            recovery.report.cursor = .unreadable
            recovery.report.cursorProblem = why
        }
        let numbers: [UInt64]
        do throws(Errno) {
            numbers = try SpoolDirectory.segmentNumbers(in: directory)
        } catch {
            throw SpoolError(.directory, "cannot list spool directory \(directory)", errno: error)
        }
        recovery.report.segments = numbers.count
        var keyIndex: [String: UInt16] = [:]
        var allSegments: [(info: SpoolSegmentInfo, records: [Record])] = []
        var previousSequence: UInt64?
        var previousNumber: UInt64?
        for number in numbers {
            guard let scanned = Self.readSegment(directory: directory, number: number, report: &recovery.report)
            else { continue }
            var info = SpoolSegmentInfo(
                number: number, firstSequence: 0, endSequence: 0, bytes: scanned.size, unacknowledged: 0,
                firstTimestamp: nil
            )
            var segmentRecords: [Record] = []
            var gapAtStart: UInt64 = 0
            for header in scanned.headers {
                let sequence = header.sequence
                if sequence > SpoolLedger.maximumSequence
                    || previousSequence.map({ sequence <= $0 || sequence - $0 > 1 << 32 }) == true
                {
                    // Out of order or out of range: not something this spool wrote in this place. Skip it like damage.
                    recovery.report.lostBytes += header.frameSize
                    continue
                }
                let expected = previousSequence.map { $0 + 1 } ?? (recovery.report.cursor == .valid ? 0 : sequence)
                let missing = Self.unresolved(from: expected, to: sequence, ledger: ledger)
                recovery.report.missingRecords += missing
                if segmentRecords.isEmpty { gapAtStart = missing }
                previousSequence = sequence
                let name = header.key
                let key: UInt16
                if let known = keyIndex[name] {
                    key = known
                } else {
                    key = UInt16(truncatingIfNeeded: recovery.keys.count)
                    if recovery.keys.count < Int(UInt16.max) {
                        keyIndex[name] = key
                        recovery.keys.append(name)
                    }
                }
                let acknowledged = ledger.isAcknowledged(sequence)
                if segmentRecords.isEmpty {
                    info.firstSequence = sequence
                    info.firstTimestamp = header.timestamp
                }
                info.endSequence = sequence + 1
                if !acknowledged { info.unacknowledged += 1 }
                segmentRecords.append(Record(sequence: sequence, key: key, acknowledged: acknowledged))
            }
            if let previous = previousNumber, number > previous + 1, gapAtStart > 0 {
                recovery.report.missingSegments += Int(min(number - previous - 1, UInt64(Int.max)))
            }
            previousNumber = number
            recovery.report.records += segmentRecords.count
            recovery.report.bytes += scanned.size
            allSegments.append((info, segmentRecords))
        }
        // Records the ledger saw appended after the last one found: a cut or deleted last segment.
        if recovery.report.cursor == .valid {
            let expected = previousSequence.map { $0 + 1 } ?? 0
            recovery.report.missingRecords += Self.unresolved(from: expected, to: ledger.nextSequence, ledger: ledger)
        }
        recovery.lastSequence = previousSequence
        recovery.nextSequence = max(previousSequence.map { $0 + 1 } ?? 0, ledger.nextSequence)
        recovery.nextSegment = (numbers.last ?? 0) + 1
        for (info, segmentRecords) in allSegments {
            if info.unacknowledged == 0 {
                // Nothing left to deliver (or nothing valid at all): delete it now.
                if (try? FileSystem.removeFile(SpoolDirectory.segmentPath(directory, info.number))) != nil {
                    recovery.report.deletedSegments += 1
                    continue
                }
            }
            recovery.segments.append(info)
            recovery.records.append(contentsOf: segmentRecords)
            recovery.report.pendingRecords += info.unacknowledged
        }
        if recovery.report.deletedSegments > 0 { try? FileSystem.syncDirectory(directory) }
        return recovery
    }

    /// Sequence numbers in `from..<to` that the ledger does not account for.
    static func unresolved(from: UInt64, to: UInt64, ledger: SpoolLedger) -> UInt64 {
        guard to > from else { return 0 }
        let start = max(from, ledger.acknowledgedBelow)
        guard to > start else { return 0 }
        var count = to - start
        for sequence in ledger.acknowledged where sequence >= start && sequence < to { count -= 1 }
        return count
    }

    struct ScannedSegment {
        var size: Int
        var headers: [(sequence: UInt64, timestamp: Int64, key: String, frameSize: Int)]
    }

    /// Reads and scans one segment, truncating its torn tail.
    ///
    /// A segment name that is not a regular file with one link (a symbolic link, a hard link to a file elsewhere,
    /// a directory, a FIFO, a device) was not written by the spool: it is skipped and reported, never read,
    /// truncated or deleted. It is opened with `O_NOFOLLOW` and checked with `fstat`, so nothing can be swapped in
    /// between the check and the use.
    ///
    /// - Returns: `nil` when the file cannot be read (counted as unreadable and left alone) or is skipped.
    static func readSegment(directory: String, number: UInt64, report: inout SpoolRecoveryReport) -> ScannedSegment? {
        let path = SpoolDirectory.segmentPath(directory, number)
        let name = SpoolDirectory.segmentName(number)
        let fd: FileDescriptor
        var writable = true
        // O_NONBLOCK: opening a FIFO must not wait for a writer; it has no effect on regular files.
        let flags = O_NOFOLLOW | O_NONBLOCK | O_NOCTTY
        do throws(Errno) {
            fd = try FileDescriptor.open(path, flags: O_RDWR | flags)
        } catch {
            do throws(Errno) {
                fd = try FileDescriptor.open(path, flags: O_RDONLY | flags)
                writable = false
            } catch {
                if error == Errno(rawValue: ELOOP) {
                    report.skippedFiles.append("\(name) (\(FileStatus.Kind.symbolicLink.rawValue))")
                } else {
                    report.unreadableSegments += 1
                }
                return nil
            }
        }
        defer { fd.close() }
        guard let status = try? fd.status() else {
            report.unreadableSegments += 1
            return nil
        }
        guard status.kind == .regular, status.links == 1 else {
            let what = status.kind == .regular ? "regular file with \(status.links) links" : status.kind.rawValue
            report.skippedFiles.append("\(name) (\(what))")
            return nil
        }
        let size = status.size
        guard size <= Self.maxSegmentFileSize else {
            report.unreadableSegments += 1
            return nil
        }
        // Its own mapping, not malloc's: a freed multi-megabyte malloc chunk raises glibc's mmap threshold, so the
        // next segment's buffer came from the heap and recovery left the process megabytes bigger for good.
        let length = max(size, 1)
        guard let mapped = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              mapped != MAP_FAILED
        else {
            report.unreadableSegments += 1
            return nil
        }
        defer { munmap(mapped, length) }
        let buffer = UnsafeMutableRawBufferPointer(start: mapped, count: length)
        guard let count = try? fd.readFully(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<size]), at: 0),
              count == size
        else {
            report.unreadableSegments += 1
            return nil
        }
        let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<size])
        let scan = SpoolScan.scan(bytes)
        report.lostBytes += scan.lostBytes
        report.corruptRegions += scan.damaged.count + (scan.tail == nil ? 0 : 1)
        var keptSize = size
        if let tail = scan.tail, writable, (try? fd.truncate(to: scan.validEnd)) != nil {
            try? fd.sync()
            report.truncatedBytes += tail.count
            keptSize = scan.validEnd
        }
        let headers = scan.records.map { header in
            (header.sequence, header.timestamp, String(decoding: bytes[header.keyRange], as: UTF8.self),
             header.frameSize)
        }
        return ScannedSegment(size: keptSize, headers: headers)
    }

    /// `mkdir -p` with mode 0700 for what it creates.
    ///
    /// An existing component must be a directory (or a symbolic link to one): anything else is reported as what it
    /// is, not as mkdir's "File exists".
    static func makeDirectories(_ path: String) throws(SpoolError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if Glibc.mkdir(prefix, 0o700) == 0 { continue }
            let error = Errno.current
            guard error == .fileExists else {
                throw SpoolError(.directory, "cannot create spool directory \(prefix)", errno: error)
            }
            let status: FileStatus
            do throws(Errno) {
                status = try FileStatus.of(prefix, following: true)
            } catch {
                let what = error == .noSuchFileOrDirectory ? "a symbolic link to nothing" : "not reachable"
                throw SpoolError(.directory, "spool directory path \(prefix) is \(what)", errno: error)
            }
            guard status.kind == .directory else {
                throw SpoolError(
                    .directory, "spool directory path \(prefix) is a \(status.kind.rawValue), not a directory"
                )
            }
        }
    }
}
