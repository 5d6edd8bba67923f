/// Where a wristband is at one moment of its ward route (`route = [[t, x, y], …]` in a `[[device]]` table).
public struct WardWaypoint: Hashable, Sendable {
    /// Simulator seconds after start.
    public var t: Double
    /// Metres on the ward's floor plan.
    public var x: Double
    public var y: Double

    public init(t: Double, x: Double, y: Double) {
        self.t = t
        self.x = x
        self.y = y
    }
}
