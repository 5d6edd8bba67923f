/// How important a log event is, as `agent.log_level` names it (SPEC §4).
///
/// Ordered by verbosity: a logger at ``info`` passes ``error``, ``warn`` and ``info`` and drops ``debug``.
public enum LogLevel: Int, Comparable, CaseIterable, Sendable, CustomStringConvertible {
    case error = 0
    case warn = 1
    case info = 2
    case debug = 3

    /// Parses a configuration value: `error`, `warn`, `info` or `debug`.
    public init?(name: String) {
        switch name {
        case "error": self = .error
        case "warn": self = .warn
        case "info": self = .info
        case "debug": self = .debug
        default: return nil
        }
    }

    /// The configuration name, also printed by the stderr backend.
    public var name: String {
        switch self {
        case .error: "error"
        case .warn: "warn"
        case .info: "info"
        case .debug: "debug"
        }
    }

    /// The syslog priority journald stores in `PRIORITY=` (`LOG_ERR` 3, `LOG_WARNING` 4, `LOG_INFO` 6,
    /// `LOG_DEBUG` 7), which `journalctl -p` filters on.
    public var syslogPriority: Int {
        switch self {
        case .error: 3
        case .warn: 4
        case .info: 6
        case .debug: 7
        }
    }

    public var description: String { self.name }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}
