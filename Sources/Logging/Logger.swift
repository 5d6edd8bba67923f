/// The value libraries accept to log through: a backend, a level, and fields attached to every event.
///
/// Libraries take a `Logger` (as with swift-log) instead of choosing a backend; the daemon builds one with
/// ``Logger/standard(identifier:level:)`` and derives per-device loggers with ``with(_:_:)``. Messages and
/// fields are `@autoclosure`s: a filtered-out `debug` call costs one atomic load and builds no string.
public struct Logger: Sendable {
    /// The backend events go to.
    public let handler: any LogHandler
    private let setting: LogLevelSetting
    /// Fields attached to every event of this logger, before the call's own fields.
    public private(set) var fields: [LogField]

    /// Creates a logger with its own level.
    public init(handler: any LogHandler, level: LogLevel = .info) {
        self.handler = handler
        self.setting = LogLevelSetting(level)
        self.fields = []
    }

    /// The most verbose level that passes. Setting it changes every logger derived from this one with
    /// ``with(_:_:)``, and the one it was derived from.
    public var level: LogLevel {
        get { self.setting.level }
        nonmutating set { self.setting.level = newValue }
    }

    /// Whether an event at `level` would be logged.
    @inlinable
    public func isEnabled(_ level: LogLevel) -> Bool {
        level <= self.level
    }

    /// A logger that adds `key=value` to every event, e.g. `logger.with("DEVICE", serial)`.
    public func with(_ key: String, _ value: String) -> Logger {
        var copy = self
        copy.fields.append(LogField(key, value))
        return copy
    }

    /// Logs `message` at `level` when the level passes.
    ///
    /// - Parameters:
    ///   - level: the event's importance.
    ///   - message: rendered only when the level passes.
    ///   - fields: structured fields, e.g. `["STREAM": "bvp"]`; rendered only when the level passes.
    public func log(
        _ level: LogLevel,
        _ message: @autoclosure () -> String,
        _ fields: @autoclosure () -> KeyValuePairs<String, String> = [:]
    ) {
        guard self.isEnabled(level) else { return }
        var all = self.fields
        for (key, value) in fields() {
            all.append(LogField(key, value))
        }
        self.handler.log(event: LogEvent(level: level, message: message(), fields: all))
    }

    /// Logs an error: something failed and was not (or could not be) handled.
    public func error(
        _ message: @autoclosure () -> String,
        _ fields: @autoclosure () -> KeyValuePairs<String, String> = [:]
    ) {
        self.log(.error, message(), fields())
    }

    /// Logs a warning: something went wrong and was handled (a retry, a fallback, a dropped packet).
    public func warn(
        _ message: @autoclosure () -> String,
        _ fields: @autoclosure () -> KeyValuePairs<String, String> = [:]
    ) {
        self.log(.warn, message(), fields())
    }

    /// Logs normal operation an operator wants to see (connected, mode changed).
    public func info(
        _ message: @autoclosure () -> String,
        _ fields: @autoclosure () -> KeyValuePairs<String, String> = [:]
    ) {
        self.log(.info, message(), fields())
    }

    /// Logs detail for debugging.
    public func debug(
        _ message: @autoclosure () -> String,
        _ fields: @autoclosure () -> KeyValuePairs<String, String> = [:]
    ) {
        self.log(.debug, message(), fields())
    }
}
