import Synchronization

/// The level shared by a logger and every logger derived from it, so that changing it (a configuration
/// reload) reaches the loggers that libraries already hold.
final class LogLevelSetting: Sendable {
    private let rawLevel: Atomic<Int>

    init(_ level: LogLevel) {
        self.rawLevel = Atomic(level.rawValue)
    }

    var level: LogLevel {
        get { LogLevel(rawValue: self.rawLevel.load(ordering: .relaxed)) ?? .info }
        set { self.rawLevel.store(newValue.rawValue, ordering: .relaxed) }
    }
}
