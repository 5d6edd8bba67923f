/// What a decoder has seen since it was created or reset; the numbers behind the per-device metrics (SPEC §10).
///
/// Counters wrap rather than trap; at BLE rates they cannot in practice.
public struct E4StreamStatistics: Hashable, Sendable {
    /// Packets decoded and returned to the caller.
    public var packets: UInt64 = 0
    /// Packets missing according to flow-counter gaps.
    public var lostPackets: UInt64 = 0
    /// Packets dropped because their counter repeated the previous one.
    public var duplicates: UInt64 = 0
    /// Backward counter jumps taken as a device-side restart of the counter.
    public var restarts: UInt64 = 0
    /// Packets dropped for a wrong length or invalid content.
    public var decodeErrors: UInt64 = 0

    public init() {}
}
