/// A fault the scenario file schedules at a time after start.
public struct ScheduledFault: Hashable, Sendable {
    /// Seconds after start.
    public var at: Double
    public var action: FaultAction

    public init(at: Double, action: FaultAction) {
        self.at = at
        self.action = action
    }
}
