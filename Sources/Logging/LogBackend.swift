#if canImport(Glibc)
import Glibc
#endif
import Posix

/// Which logging backend the process uses, decided once at start-up.
public enum LogBackend: Sendable, Equatable {
    /// One line per event on standard error (``StderrLogHandler``).
    case stderr
    /// Structured events to the systemd journal (``JournaldLogHandler``).
    case journald

    /// The backend for this process: ``journald`` when systemd connected standard error to the journal,
    /// ``stderr`` otherwise.
    ///
    /// systemd sets `JOURNAL_STREAM=<device>:<inode>` for a service whose output goes to the journal. As
    /// systemd.exec(5) recommends, the variable counts only when those numbers match the current standard
    /// error: it is inherited by child processes whose stderr was redirected (a shell pipeline started from a
    /// unit, a test harness), and those want plain lines.
    public static func fromEnvironment() -> LogBackend {
        let value = getenv("JOURNAL_STREAM").map { String(cString: $0) }
        return self.select(journalStream: value, standardError: .standardError)
    }

    /// The selection rule of ``fromEnvironment()`` for a given `JOURNAL_STREAM` value and descriptor.
    public static func select(journalStream: String?, standardError: FileDescriptor) -> LogBackend {
        guard let journalStream, !journalStream.isEmpty else { return .stderr }
        let parts = journalStream.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return .stderr }
        var status = stat()
        guard fstat(standardError.rawValue, &status) == 0 else { return .stderr }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode ? .journald : .stderr
    }

    /// A handler for this backend.
    ///
    /// - Parameter identifier: the program name, `SYSLOG_IDENTIFIER` in the journal.
    public func makeHandler(identifier: String) -> any LogHandler {
        switch self {
        case .stderr: StderrLogHandler()
        case .journald: JournaldLogHandler(identifier: identifier)
        }
    }
}
