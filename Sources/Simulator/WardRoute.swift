/// A wristband's walk through the ward: timed waypoints, straight lines between them, standing still before the
/// first and after the last.
public struct WardRoute: Hashable, Sendable {
    /// In time order (equal times allowed: a jump).
    public private(set) var waypoints: [WardWaypoint]

    /// - Parameter waypoints: at least one, in non-decreasing time (the parser checks; here they are sorted).
    public init(_ waypoints: [WardWaypoint]) {
        self.waypoints = waypoints.sorted { $0.t < $1.t }
    }

    /// A wristband that does not move.
    public static func standing(x: Double, y: Double) -> WardRoute {
        WardRoute([WardWaypoint(t: 0, x: x, y: y)])
    }

    /// The position at simulator time `t`: linear between the waypoints around it, held outside them.
    ///
    /// - Complexity: O(log n) in the number of waypoints.
    public func position(at t: Double) -> (x: Double, y: Double) {
        guard let first = self.waypoints.first, let last = self.waypoints.last else { return (0, 0) }
        if t <= first.t { return (first.x, first.y) }
        if t >= last.t { return (last.x, last.y) }
        // The last waypoint at or before t (binary search), and the one after it.
        var low = 0
        var high = self.waypoints.count - 1
        while high - low > 1 {
            let middle = (low + high) / 2
            if self.waypoints[middle].t <= t { low = middle } else { high = middle }
        }
        let a = self.waypoints[low]
        let b = self.waypoints[high]
        let span = b.t - a.t
        guard span > 0 else { return (b.x, b.y) }
        let f = (t - a.t) / span
        return (a.x + (b.x - a.x) * f, a.y + (b.y - a.y) * f)
    }
}
