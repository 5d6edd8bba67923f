/// Follows one stream's flow counter and turns each new value into an ``E4Continuity``.
///
/// With `d = (counter − last) mod 2ⁿ`:
/// - no previous counter (after init or ``reset()``): ``E4Continuity/first``, nothing lost;
/// - `d == 0`: a duplicate, dropped (``E4DecodeError/duplicate(counter:)``);
/// - `1 ≤ d ≤ maximumForwardStep`: forward, `d − 1` packets lost (``E4Continuity/next`` when none);
/// - otherwise (16/32-bit only): a backward jump, taken as a counter restart (``E4Continuity/restart``).
///
/// ``classify(_:)`` does not change the tracker, so a decoder can reject a packet's content after reading its
/// counter without disturbing the stream; ``accept(_:)`` commits.
public struct E4FlowTracker: Hashable, Sendable {
    /// The counter width this tracker wraps at.
    public let width: E4CounterWidth
    /// The counter of the last accepted packet, or `nil` before the first.
    public private(set) var last: UInt32?

    /// A tracker with no previous counter.
    public init(width: E4CounterWidth) {
        self.width = width
        self.last = nil
    }

    /// Forgets the previous counter (on connect or reconnect); the next packet is ``E4Continuity/first``.
    public mutating func reset() {
        self.last = nil
    }

    /// How `counter` follows the last accepted counter; the tracker is unchanged.
    ///
    /// - Parameter counter: The packet's flow counter; bits above the width are ignored.
    /// - Returns: The continuity of the packet.
    /// - Throws: ``E4DecodeError/duplicate(counter:)`` when it repeats the last counter.
    public func classify(_ counter: UInt32) throws(E4DecodeError) -> E4Continuity {
        let modulus = self.width.modulus
        let current = UInt64(counter) & (modulus - 1)
        guard let last = self.last else { return .first }
        let step = (current &+ modulus &- UInt64(last)) & (modulus - 1)
        if step == 0 { throw .duplicate(counter: UInt32(truncatingIfNeeded: current)) }
        if step <= self.width.maximumForwardStep {
            return step == 1 ? .next : .gap(lost: Int(step - 1))
        }
        return .restart
    }

    /// Makes `counter` the last accepted counter.
    public mutating func accept(_ counter: UInt32) {
        self.last = UInt32(truncatingIfNeeded: UInt64(counter) & (self.width.modulus - 1))
    }
}
