/// The ward of a `--ward` scenario (table `[ward]`, SPEC §18): boards at positions, the radio model, board events.
/// The wristbands' routes are the `[[device]] route` keys (``Scenario/routes``).
public struct WardScenario: Hashable, Sendable {
    public var boards: [WardBoard] = []
    public var pathLoss = PathLossModel()
    /// In time order.
    public var events: [WardEvent] = []

    public init() {}

    /// The index of the board called `name`.
    public func board(named name: String) -> Int? {
        self.boards.firstIndex { $0.name == name }
    }

    /// The distance in metres from `position` to board `board`.
    func distance(from position: (x: Double, y: Double), toBoard board: Int) -> Double {
        let b = self.boards[board]
        let dx = position.x - b.x
        let dy = position.y - b.y
        return (dx * dx + dy * dy).squareRoot()
    }
}
