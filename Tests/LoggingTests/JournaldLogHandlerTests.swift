#if canImport(Glibc)
import Glibc
#endif
import Posix
import Synchronization
import Testing

@testable import Logging

/// What a fake `sd_journal_sendv` received.
private final class SentEntries: Sendable {
    let entries = Mutex<[[String]]>([])
}

@Suite("journald backend")
struct JournaldLogHandlerTests {
    private static let journalSocketExists = access("/run/systemd/journal/socket", F_OK) == 0

    @Test func sendsMessagePriorityIdentifierAndUpperCasedFields() {
        let sent = SentEntries()
        let handler = JournaldLogHandler(identifier: "empalinkd", fallback: nil) { vectors in
            let entries = vectors.map { vector in
                String(decoding: UnsafeRawBufferPointer(start: vector.iov_base, count: vector.iov_len), as: UTF8.self)
            }
            sent.entries.withLock { $0.append(entries) }
            return 0
        }
        let logger = Logger(handler: handler, level: .debug).with("DEVICE", "9ff167")
        logger.warn("decode error\nin packet", ["stream": "bvp"])
        let entries = sent.entries.withLock { $0 }
        #expect(entries == [[
            "MESSAGE=decode error\nin packet", "PRIORITY=4", "SYSLOG_IDENTIFIER=empalinkd",
            "DEVICE=9ff167", "STREAM=bvp",
        ]])
        #expect(handler.failures == 0)
    }

    @Test(arguments: [
        ("device", "DEVICE"), ("rx-packets", "RX_PACKETS"), ("_PID", "F_PID"), ("2g", "F2G"), ("", "F"),
        ("état", "F_TAT"), (String(repeating: "A", count: 80), String(repeating: "A", count: 64)),
    ])
    func fieldNamesAreMadeValidForTheJournal(key: String, expected: String) {
        #expect(JournaldLogHandler.fieldName(key) == expected)
    }

    @Test func refusedEventGoesToTheFallbackAndIsCounted() {
        let memory = MemoryLogHandler()
        let handler = JournaldLogHandler(identifier: "empalinkd", fallback: memory) { _ in -ENOENT }
        Logger(handler: handler).error("journal gone", ["DEVICE": "9ff167"])
        #expect(handler.failures == 1)
        #expect(memory.events.map(\.message) == ["journal gone"])
        #expect(memory.events.first?.fields == [LogField("DEVICE", "9ff167")])
    }

    /// libsystemd treats a missing journal socket as "not running under systemd" and returns success (it
    /// drops the event); other failures return a negative errno. Either way the call must return normally and
    /// the fallback must see exactly the refused events.
    @Test(.enabled(if: !Self.journalSocketExists, "a journal is listening; sending would really log"))
    func realSendWithoutAJournalNeitherTrapsNorLosesTrackOfFailures() {
        let memory = MemoryLogHandler()
        let handler = JournaldLogHandler(identifier: "empalink-test", fallback: memory)
        Logger(handler: handler).info("no journal here")
        #expect(handler.failures <= 1)
        #expect(memory.events.count == handler.failures)

        let silent = JournaldLogHandler(identifier: "empalink-test", fallback: nil)
        Logger(handler: silent).info("dropped quietly")
        #expect(silent.failures <= 1)
    }
}
