import Testing

@testable import Logging

@Suite("Logger levels and fields")
struct LoggerTests {
    @Test(arguments: LogLevel.allCases)
    func levelNamesRoundTrip(level: LogLevel) {
        #expect(LogLevel(name: level.name) == level)
    }

    @Test func unknownLevelNameIsRejected() {
        #expect(LogLevel(name: "verbose") == nil)
        #expect(LogLevel(name: "INFO") == nil)
    }

    @Test func syslogPrioritiesMatchJournalctl() {
        #expect(LogLevel.allCases.map(\.syslogPriority) == [3, 4, 6, 7])
    }

    @Test func eventsAboveTheLevelAreDroppedWithoutRenderingTheirMessage() {
        let memory = MemoryLogHandler()
        let logger = Logger(handler: memory, level: .warn)
        var rendered: [String] = []
        func message(_ text: String) -> String {
            rendered.append(text)
            return text
        }
        logger.debug(message("d"))
        logger.info(message("i"))
        logger.warn(message("w"))
        logger.error(message("e"))
        #expect(memory.events.map(\.message) == ["w", "e"])
        #expect(memory.events.map(\.level) == [.warn, .error])
        #expect(rendered == ["w", "e"])
    }

    @Test func derivedLoggersAddTheirFieldsFirstAndShareTheLevel() {
        let memory = MemoryLogHandler()
        let root = Logger(handler: memory, level: .info)
        let device = root.with("DEVICE", "9ff167")
        device.info("connected", ["STREAM": "bvp", "RSSI": "-60"])
        device.debug("hidden")
        root.level = .debug  // a configuration reload reaches the derived logger
        device.debug("shown")
        #expect(memory.events.map(\.message) == ["connected", "shown"])
        #expect(memory.events.first?.fields == [
            LogField("DEVICE", "9ff167"), LogField("STREAM", "bvp"), LogField("RSSI", "-60"),
        ])
        #expect(root.fields.isEmpty)
        #expect(device.level == .debug)
    }

    @Test func discardingLoggerDropsEverything() {
        let logger = Logger.discarding
        logger.error("nothing happens")
        #expect(logger.handler is DiscardingLogHandler)
    }
}
