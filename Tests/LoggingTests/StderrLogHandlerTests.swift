#if canImport(Glibc)
import Glibc
#endif
import Posix
import Testing

@testable import Logging

@Suite("stderr backend")
struct StderrLogHandlerTests {
    @Test func lineHasLevelMessageAndFields() {
        let event = LogEvent(level: .warn, message: "reconnecting", fields: [
            LogField("DEVICE", "9ff167"), LogField("ATTEMPT", "3"),
        ])
        #expect(StderrLogHandler.format(event) == "warn: reconnecting DEVICE=9ff167 ATTEMPT=3\n")
    }

    @Test func valuesWithSpacesQuotesOrNewlinesAreQuotedAndEscaped() {
        let event = LogEvent(level: .error, message: "two\nlines", fields: [
            LogField("ERROR", "org.bluez.Error.Failed: le-connection-abort-by-local"),
            LogField("QUOTE", "say \"hi\"\\"),
            LogField("EMPTY", ""),
            LogField("EQ", "a=b"),
        ])
        let expected = #"error: two\nlines ERROR="org.bluez.Error.Failed: le-connection-abort-by-local" "#
            + #"QUOTE="say \"hi\"\\" EMPTY="" EQ="a=b""# + "\n"
        #expect(StderrLogHandler.format(event) == expected)
    }

    @Test func controlCharactersNeverBreakTheLine() {
        let event = LogEvent(level: .info, message: "a\u{1b}[31mb\r", fields: [LogField("V", "x\ty")])
        let line = StderrLogHandler.format(event)
        #expect(line == "info: a\\u{1b}[31mb\\r V=\"x\\ty\"\n")
        #expect(line.filter { $0 == "\n" }.count == 1)
    }

    @Test func loggerWritesOneLinePerPassingEventToTheDescriptor() throws {
        let (readEnd, writeEnd) = try FileDescriptor.pipe()
        defer { readEnd.close() }
        let logger = Logger(handler: StderrLogHandler(fileDescriptor: writeEnd), level: .info)
            .with("DEVICE", "9ff167")
        logger.debug("not shown")
        logger.info("connected", ["STREAM": "bvp"])
        logger.error("lost", ["REASON": "hang up"])
        writeEnd.close()
        let output = String(decoding: try readEnd.readToEnd(), as: UTF8.self)
        #expect(output == """
            info: connected DEVICE=9ff167 STREAM=bvp
            error: lost DEVICE=9ff167 REASON="hang up"

            """)
    }

    @Test func writeFailureIsNotFatal() throws {
        // An invalid descriptor: the write fails with EBADF and the event is dropped, without trapping. (Not a
        // closed pipe: other tests run in parallel and may be handed the same descriptor number.)
        StderrLogHandler(fileDescriptor: FileDescriptor(rawValue: -1))
            .log(event: LogEvent(level: .error, message: "dropped"))
    }
}
