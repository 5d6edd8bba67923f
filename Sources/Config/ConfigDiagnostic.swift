/// One configuration error, at a position in the file where there is one.
public struct ConfigDiagnostic: Error, Hashable, Sendable {
    /// Where in the file; `nil` for errors about the file as a whole (missing, unreadable).
    public var position: SourcePosition?
    /// One line: what is wrong and what was expected.
    public var message: String
    /// An error stops the agent (exit 2); a warning is reported and the agent runs.
    public var severity: Severity

    public enum Severity: String, Hashable, Sendable {
        case error, warning
    }

    public init(_ message: String, at position: SourcePosition?, severity: Severity = .error) {
        self.message = message
        self.position = position
        self.severity = severity
    }

    /// `PATH:LINE:COL: error: MESSAGE` (or `PATH: error: MESSAGE` without a position; `warning:` for a
    /// warning), the compiler-style line editors and CI logs understand.
    public func formatted(path: String) -> String {
        if let position = self.position {
            return "\(path):\(position.line):\(position.column): \(self.severity.rawValue): \(self.message)"
        }
        return "\(path): \(self.severity.rawValue): \(self.message)"
    }
}

/// Every error found in one configuration file, in file order.
public struct ConfigErrors: Error, Sendable {
    public var diagnostics: [ConfigDiagnostic]

    public init(_ diagnostics: [ConfigDiagnostic]) {
        self.diagnostics = diagnostics
    }
}
