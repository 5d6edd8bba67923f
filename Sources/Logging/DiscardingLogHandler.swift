/// A backend that drops every event.
public struct DiscardingLogHandler: LogHandler {
    public init() {}

    public func log(event: LogEvent) {}
}
