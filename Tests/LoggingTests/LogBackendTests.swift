#if canImport(Glibc)
import Glibc
#endif
import Posix
import Testing

@testable import Logging

@Suite("backend selection")
struct LogBackendTests {
    /// `JOURNAL_STREAM` as systemd would set it for `fd`.
    private func journalStream(for fd: FileDescriptor) throws -> String {
        var status = stat()
        try #require(fstat(fd.rawValue, &status) == 0)
        return "\(status.st_dev):\(status.st_ino)"
    }

    @Test func journalStreamMatchingStandardErrorSelectsJournald() throws {
        let (readEnd, writeEnd) = try FileDescriptor.pipe()
        defer { readEnd.close(); writeEnd.close() }
        let value = try self.journalStream(for: writeEnd)
        #expect(LogBackend.select(journalStream: value, standardError: writeEnd) == .journald)
        #expect(LogBackend.journald.makeHandler(identifier: "x") is JournaldLogHandler)
    }

    @Test func journalStreamOfAnotherDescriptorSelectsStderr() throws {
        let (readEnd, writeEnd) = try FileDescriptor.pipe()
        let (otherRead, otherWrite) = try FileDescriptor.pipe()
        defer { readEnd.close(); writeEnd.close(); otherRead.close(); otherWrite.close() }
        let value = try self.journalStream(for: otherWrite)
        #expect(LogBackend.select(journalStream: value, standardError: writeEnd) == .stderr)
    }

    @Test(arguments: [nil, "", "garbage", "1:", ":2", "1:2:3"] as [String?])
    func missingOrMalformedJournalStreamSelectsStderr(value: String?) throws {
        let (readEnd, writeEnd) = try FileDescriptor.pipe()
        defer { readEnd.close(); writeEnd.close() }
        #expect(LogBackend.select(journalStream: value, standardError: writeEnd) == .stderr)
        #expect(LogBackend.stderr.makeHandler(identifier: "x") is StderrLogHandler)
    }

    @Test func environmentSelectionFollowsTheSameRule() {
        let value = getenv("JOURNAL_STREAM").map { String(cString: $0) }
        #expect(LogBackend.fromEnvironment() == LogBackend.select(journalStream: value, standardError: .standardError))
    }
}
