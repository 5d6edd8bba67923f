/// What a device's decoders have seen since it was first connected; the numbers behind the per-device metrics
/// (SPEC §10). Counters wrap rather than trap.
public struct DecoderStatistics: Hashable, Sendable {
    /// Values decoded.
    public var packets: UInt64 = 0
    /// Packets (or, for a profile without flow counters, beats) known to be missing.
    public var lostPackets: UInt64 = 0
    /// Packets dropped because they repeated the previous one.
    public var duplicates: UInt64 = 0
    /// Device-side restarts of a flow counter.
    public var restarts: UInt64 = 0
    /// Values dropped for a wrong length or invalid content.
    public var decodeErrors: UInt64 = 0

    public init(packets: UInt64 = 0, lostPackets: UInt64 = 0, duplicates: UInt64 = 0, restarts: UInt64 = 0,
                decodeErrors: UInt64 = 0) {
        self.packets = packets
        self.lostPackets = lostPackets
        self.duplicates = duplicates
        self.restarts = restarts
        self.decodeErrors = decodeErrors
    }
}
