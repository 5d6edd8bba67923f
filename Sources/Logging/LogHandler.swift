/// A logging backend, chosen once at start-up (see ``LogBackend``), as swift-log's `LogHandler`.
///
/// Handlers are called from any thread, and must not block for long: the event loop logs too.
public protocol LogHandler: Sendable {
    /// Records one event that passed the logger's level.
    func log(event: LogEvent)
}
