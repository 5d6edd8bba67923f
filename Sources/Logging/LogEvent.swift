/// One log event as a backend receives it: the message is already rendered, the logger's own fields come
/// first, then the call's.
public struct LogEvent: Sendable {
    public var level: LogLevel
    public var message: String
    public var fields: [LogField]

    public init(level: LogLevel, message: String, fields: [LogField] = []) {
        self.level = level
        self.message = message
        self.fields = fields
    }
}
