extension Logger {
    /// The daemon's logger: journald when the process runs under systemd with its stderr connected to the
    /// journal, stderr otherwise (see ``LogBackend/fromEnvironment()``).
    ///
    /// - Parameters:
    ///   - identifier: `SYSLOG_IDENTIFIER`, e.g. `empalinkd`.
    ///   - level: `agent.log_level`.
    public static func standard(identifier: String, level: LogLevel) -> Logger {
        Logger(handler: LogBackend.fromEnvironment().makeHandler(identifier: identifier), level: level)
    }

    /// A logger that drops everything: the default for libraries whose caller passes none, and for tests.
    public static var discarding: Logger {
        Logger(handler: DiscardingLogHandler(), level: .error)
    }
}
