import Config

/// Why a scenario file was rejected: its position and a message naming what was expected.
public struct ScenarioError: Error, Hashable, Sendable, CustomStringConvertible {
    public var position: SourcePosition
    public var message: String

    public init(_ message: String, at position: SourcePosition) {
        self.message = message
        self.position = position
    }

    /// `LINE:COL: MESSAGE`.
    public var description: String { "\(self.position): \(self.message)" }
}
