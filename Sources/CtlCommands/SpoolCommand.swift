import Posix
import Spool

/// `empalinkctl spool inspect|verify --dir DIR`: a read-only look at a spool directory.
///
/// `inspect` prints counts, sizes, the oldest and newest record, the cursor and the streams; `verify` checks every
/// record's CRC and the ledger and exits 1 with a one-line summary when anything is damaged. Neither changes a
/// byte (recovery, which truncates torn tails, is the agent's job), so both are safe next to a running agent.
public enum SpoolCommand: CtlCommand {
    public static let name = "spool"
    public static let summary = "inspect or verify a spool directory (counts, sizes, oldest/newest, CRCs)"
    public static let usage = """
        empalinkctl spool inspect|verify [--dir DIR]
          inspect     segments, records (pending / acknowledged), bytes, oldest and newest record, streams
          verify      check every record's CRC and the cursor; exit 1 with a one-line summary on damage
          --dir DIR   the spool directory (default /var/lib/empalink/spool)
        """

    enum Action: String {
        case inspect, verify
    }

    /// - Returns: 0 ok; 1 when the directory cannot be read, or (verify) on damage; 2 for usage errors.
    public static func run(arguments: [String]) -> Int32 {
        var action: Action?
        var directory = "/var/lib/empalink/spool"
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--dir" {
                guard index + 1 < arguments.count else { return Self.usageError("--dir needs a directory") }
                directory = arguments[index + 1]
                index += 2
                continue
            }
            if argument.hasPrefix("--dir=") {
                directory = String(argument.dropFirst("--dir=".count))
            } else if action == nil, let parsed = Action(rawValue: argument) {
                action = parsed
            } else {
                return Self.usageError("unexpected argument '\(argument)'")
            }
            index += 1
        }
        guard let action else { return Self.usageError("missing action: inspect or verify") }
        guard !directory.isEmpty else { return Self.usageError("--dir needs a directory") }
        let inspection: SpoolInspection
        do throws(Errno) {
            inspection = try SpoolInspection.inspect(directory: directory)
        } catch {
            Console.err("spool: \(directory): error: cannot read the spool directory: \(error)")
            return 1
        }
        if let foreign = Self.foreignEntries(inspection) {
            Console.err("spool: \(directory): error: not a spool directory (no segments, no cursor, "
                            + "\(foreign) other entries); check --dir")
            return 1
        }
        switch action {
        case .inspect:
            for line in Self.describe(inspection) { Console.out(line) }
            return 0
        case .verify:
            let line = Self.verdict(inspection)
            if inspection.isDamaged {
                Console.err(line)
                return 1
            }
            Console.out(line)
            return 0
        }
    }

    /// A directory with no segment and no cursor but other files is not a spool (a mistyped `--dir /etc` would
    /// otherwise verify "ok"); an empty one is a spool before its first record.
    ///
    /// - Returns: the number of entries no spool writes, when nothing in the directory is the spool's.
    static func foreignEntries(_ inspection: SpoolInspection) -> Int? {
        guard inspection.segments.isEmpty, inspection.cursor == .missing,
              let names = try? FileSystem.contentsOfDirectory(inspection.directory)
        else { return nil }
        // The ledger's temporary file and the directory lock are the spool's own.
        let foreign = names.filter { $0 != "cursor.tmp" && !$0.contains("lock") }.count
        return foreign > 0 ? foreign : nil
    }

    private static func usageError(_ message: String) -> Int32 {
        Console.err("spool: \(message)")
        Console.err("usage: \(Self.usage)")
        return 2
    }

    /// The `inspect` report, one fact per line.
    static func describe(_ inspection: SpoolInspection) -> [String] {
        var lines = ["directory: \(inspection.directory)"]
        let numbers = inspection.segments.map(\.number)
        let range = numbers.isEmpty ? "" : " (\(numbers.first ?? 0)…\(numbers.last ?? 0))"
        lines.append("segments: \(inspection.segments.count)\(range)")
        lines.append("bytes: \(inspection.bytes)")
        lines.append("records: \(inspection.records) (\(inspection.pending) pending, "
            + "\(inspection.records - inspection.pending) acknowledged)")
        if let oldest = inspection.oldest {
            lines.append("oldest: \(Self.utc(oldest.timestamp)) (seq \(oldest.sequence))")
        }
        if let newest = inspection.newest {
            lines.append("newest: \(Self.utc(newest.timestamp)) (seq \(newest.sequence))")
        }
        var cursor = "cursor: \(inspection.cursor.rawValue)" + (inspection.cursorProblem.map { " (\($0))" } ?? "")
        if let ledger = inspection.ledger {
            cursor += " (acknowledged below \(ledger.acknowledgedBelow), \(ledger.acknowledged.count) more listed, "
                + "next sequence \(ledger.nextSequence))"
        }
        lines.append(cursor)
        for stream in inspection.streams {
            lines.append("stream \(stream.key): \(stream.records) records")
        }
        for segment in inspection.segments where segment.unreadable || segment.lostBytes > 0 {
            let name = SpoolDirectory.segmentName(segment.number)
            lines.append(segment.unreadable ? "damage: \(name) unreadable"
                : "damage: \(name) \(segment.lostBytes) bytes lost in \(segment.damagedRegions) regions")
        }
        lines.append(Self.verdict(inspection))
        return lines
    }

    /// verify's one line.
    static func verdict(_ inspection: SpoolInspection) -> String {
        let counts = "\(inspection.segments.count) segments, \(inspection.records) records, \(inspection.bytes) bytes"
        guard inspection.isDamaged else { return "spool: ok: \(counts), every CRC valid" }
        var problems: [String] = []
        let damaged = inspection.segments.filter { $0.lostBytes > 0 }.count
        if inspection.lostBytes > 0 {
            problems.append("\(inspection.lostBytes) bytes lost in \(inspection.damagedRegions) corrupt regions "
                + "of \(damaged) segments")
        }
        let unreadable = inspection.segments.filter(\.unreadable).count
        if unreadable > 0 { problems.append("\(unreadable) segments unreadable") }
        if inspection.missingRecords > 0 { problems.append("up to \(inspection.missingRecords) records missing") }
        if inspection.cursor == .corrupt { problems.append("cursor corrupt (everything would be replayed)") }
        if inspection.cursor == .unreadable {
            problems.append("cursor unreadable: \(inspection.cursorProblem ?? "?") (everything would be replayed)")
        }
        return "spool: DAMAGED: " + problems.joined(separator: "; ") + " (\(counts))"
    }

    /// Microseconds since 1970 as ISO 8601 UTC, without Foundation.
    static func utc(_ microseconds: Int64) -> String {
        let seconds = microseconds >= 0 ? microseconds / 1_000_000 : (microseconds - 999_999) / 1_000_000
        let fraction = microseconds - seconds * 1_000_000
        var days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        // Howard Hinnant's civil_from_days.
        days += 719_468
        let era = (days >= 0 ? days : days - 146_096) / 146_097
        let dayOfEra = days - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):"
            + "\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2)).\(pad(fraction, 6))Z"
    }
}
