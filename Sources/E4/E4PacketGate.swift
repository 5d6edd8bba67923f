/// The bookkeeping every counted sensor stream shares: the length check, the flow counter and the statistics.
///
/// A decoder calls ``checkLength(_:_:)``, then ``classify(_:)`` with the packet's counter, writes its samples,
/// then ``accept(_:_:)``. Every rejection is counted here, so the four decoders count alike and none of them
/// repeats the rules.
struct E4PacketGate: Sendable {
    /// The flow counter.
    private(set) var flow: E4FlowTracker
    /// What the stream has seen.
    private(set) var statistics = E4StreamStatistics()

    init(width: E4CounterWidth) {
        self.flow = E4FlowTracker(width: width)
    }

    /// Forgets the flow counter (on connect and reconnect); statistics are kept.
    mutating func reset() {
        self.flow.reset()
    }

    /// Throws, and counts a decode error, unless `bytes` is `expected` bytes long.
    @inline(__always)
    mutating func checkLength(_ bytes: RawSpan, _ expected: Int) throws(E4DecodeError) {
        guard bytes.byteCount == expected else {
            self.statistics.decodeErrors &+= 1
            throw .wrongLength(expected: expected, actual: bytes.byteCount)
        }
    }

    /// Counts a decode error for content that does not fit and returns the error to throw.
    mutating func invalid(_ content: E4InvalidContent) -> E4DecodeError {
        self.statistics.decodeErrors &+= 1
        return .invalidContent(content)
    }

    /// How `counter` follows the last accepted packet; throws, and counts a duplicate, for a repeat.
    @inline(__always)
    mutating func classify(_ counter: UInt32) throws(E4DecodeError) -> E4Continuity {
        do {
            return try self.flow.classify(counter)
        } catch {
            self.statistics.duplicates &+= 1
            throw error
        }
    }

    /// Takes `counter` as the last accepted packet and counts what `continuity` says was lost or restarted.
    @inline(__always)
    mutating func accept(_ counter: UInt32, _ continuity: E4Continuity) {
        self.flow.accept(counter)
        self.statistics.record(continuity)
    }
}
