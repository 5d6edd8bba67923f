import Synchronization

/// A backend that keeps events in memory, for tests that assert what a component logged.
public final class MemoryLogHandler: LogHandler {
    private let stored = Mutex<[LogEvent]>([])

    public init() {}

    public func log(event: LogEvent) {
        self.stored.withLock { $0.append(event) }
    }

    /// Every event logged so far, oldest first.
    public var events: [LogEvent] {
        self.stored.withLock { $0 }
    }
}
