/// A device stream of the MQTT contract (SPEC §10): the last topic level of `P/A/S/<stream>`.
public enum ConsumerStream: String, CaseIterable, Hashable, Sendable {
    case bvp, gsr, temp, acc, ibi, hr, battery, tag
    /// A heart-rate sensor's skin contact changes, `[[t, 1|0], …]` (SPEC §16).
    case contact

    /// Sampled streams carry `t`, `fs` and `v`; the others `v` as `[[t, value], …]` (`tag`: `[t, …]`).
    public var isSampled: Bool {
        switch self {
        case .bvp, .gsr, .temp, .acc: return true
        case .ibi, .hr, .battery, .tag, .contact: return false
        }
    }

    /// Values per sample: 3 for `acc`, 1 otherwise.
    public var columns: Int { self == .acc ? 3 : 1 }
}
