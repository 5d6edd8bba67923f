/// A TOML syntax or semantic error (duplicate key, redefined table, …) at a position in the document.
public struct TOMLError: Error, Hashable, Sendable, CustomStringConvertible {
    public var position: SourcePosition
    /// One line, lower-case start, saying what was found and what was expected,
    /// e.g. "expected '=' after key \"port\", found '\"'".
    public var message: String

    public init(_ message: String, at position: SourcePosition) {
        self.message = message
        self.position = position
    }

    /// `LINE:COL: MESSAGE`.
    public var description: String { "\(self.position): \(self.message)" }
}
