/// De-duplication, reordering and gap detection for one (device, stream, `sid`) sequence (SPEC §10, §17).
///
/// `seq` counts from 0 per (`sid`, stream). The first message seen starts the sequence (a consumer that joins late
/// starts where it joins). A message below the next expected `seq` is a duplicate (spool replay, at-least-once
/// delivery) and dropped; one above it waits in a bounded buffer until the missing ones arrive. A gap is declared
/// when the oldest waiting message has waited ``window`` seconds or the buffer holds ``capacity`` messages: the
/// missing numbers are reported once, and later arrivals of them count as late (dropped, never delivered out of
/// order). Pure: time is a parameter.
public struct StreamOrder: Sendable {
    /// The next `seq` to deliver; `nil` before the first message.
    public private(set) var next: Int?
    var waiting: [Int: DataMessage] = [:]
    /// When the oldest waiting message arrived.
    var waitingSince: Double?
    public let window: Double
    public let capacity: Int

    public init(window: Double = 2.0, capacity: Int = 256) {
        self.window = window
        self.capacity = capacity
    }

    /// What the sequence yields, in order.
    public enum Output: Equatable, Sendable {
        case deliver(DataMessage)
        /// `count` messages starting at `seq` never arrived.
        case gap(seq: Int, count: Int)
        /// A `seq` already delivered or declared lost: dropped.
        case duplicate(seq: Int)
    }

    /// Messages waiting for an earlier `seq`.
    public var waitingCount: Int { self.waiting.count }

    /// Takes one message; returns what can be delivered now.
    public mutating func accept(_ message: DataMessage, now: Double) -> [Output] {
        guard let next = self.next else {
            self.next = message.seq + 1
            return [.deliver(message)]
        }
        if message.seq < next || self.waiting[message.seq] != nil { return [.duplicate(seq: message.seq)] }
        if message.seq == next {
            self.next = next + 1
            var outputs: [Output] = [.deliver(message)]
            self.drain(into: &outputs)
            return outputs
        }
        self.waiting[message.seq] = message
        if self.waitingSince == nil { self.waitingSince = now }
        var outputs: [Output] = []
        if self.waiting.count >= self.capacity { self.skipToOldestWaiting(into: &outputs) }
        return outputs
    }

    /// Declares a gap when the oldest waiting message has waited ``window`` seconds.
    public mutating func flush(now: Double) -> [Output] {
        guard let since = self.waitingSince, now - since >= self.window else { return [] }
        var outputs: [Output] = []
        self.skipToOldestWaiting(into: &outputs)
        return outputs
    }

    /// Gives up waiting: reports the missing run before the oldest waiting message and delivers from there.
    public mutating func skipToOldestWaiting(into outputs: inout [Output]) {
        guard let next = self.next, let oldest = self.waiting.keys.min() else { return }
        outputs.append(.gap(seq: next, count: oldest - next))
        self.next = oldest
        self.drain(into: &outputs)
    }

    mutating func drain(into outputs: inout [Output]) {
        while let next = self.next, let message = self.waiting.removeValue(forKey: next) {
            outputs.append(.deliver(message))
            self.next = next + 1
        }
        // Still waiting: the rest has waited since the same moment, so a further gap is declared no later.
        if self.waiting.isEmpty { self.waitingSince = nil }
    }
}
