/// One decoded battery value.
public struct E4BatteryReading: Hashable, Sendable {
    /// The charge in percent, 0…100.
    public var percent: UInt8
    /// The charge as the SDK reports it, 0.0…1.0.
    public var level: Float

    public init(percent: UInt8, level: Float) {
        self.percent = percent
        self.level = level
    }
}
