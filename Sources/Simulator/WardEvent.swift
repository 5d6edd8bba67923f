/// A scheduled event of one board (`[[ward.event]]`).
public struct WardEvent: Hashable, Sendable {
    public enum Action: Hashable, Sendable {
        /// The board's radio goes deaf for `seconds`: its links are lost, it hears no advertisement and its
        /// connection attempts time out, while its adapter still reads powered (a controller that hangs).
        case radioOff(seconds: Double)
        /// The board's adapter powers off for `seconds` (as the `power_off` fault, on that board only).
        case powerOff(seconds: Double)
    }

    /// Simulator seconds after start.
    public var at: Double
    /// Index into ``WardScenario/boards``.
    public var board: Int
    public var action: Action

    public init(at: Double, board: Int, action: Action) {
        self.at = at
        self.board = board
        self.action = action
    }
}
