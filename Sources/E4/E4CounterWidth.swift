/// The width of a stream's flow counter: BVP 6 bits, ACC and GSR 16 bits, temperature 32 bits.
public enum E4CounterWidth: Int, Sendable, Hashable {
    case bits6 = 6
    case bits16 = 16
    case bits32 = 32

    /// The number of distinct counter values, after which the counter wraps to 0.
    public var modulus: UInt64 { UInt64(1) << UInt64(self.rawValue) }

    /// The largest forward step still read as "forward" (a gap); larger steps are backward jumps (a restart).
    ///
    /// A 6-bit counter wraps every 64 packets (about 11 s of BVP), too short to tell a restart from a gap, so
    /// every non-zero step is forward. The 16- and 32-bit counters split their range in half, like TCP
    /// sequence numbers: a step of less than half the range is forward.
    public var maximumForwardStep: UInt64 {
        switch self {
        case .bits6: self.modulus - 1
        case .bits16, .bits32: self.modulus / 2 - 1
        }
    }
}
