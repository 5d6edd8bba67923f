/// Why the simulator could not start or keep running: one line for the operator.
public struct SimulatorError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { self.message }
}
