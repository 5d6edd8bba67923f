/// Control-plane messages (status, devices, wristband status, metrics, command results) the broker could not take
/// when they were published: the in-flight window was full, or the broker was away.
///
/// - Retained state topics keep their latest payload per topic until it is published: `P/A/status`, `P/A/devices`
///   and `P/A/S/status` must end up saying what is true now, and only the latest value matters. A newer value
///   replaces a held one, and publishing a newer value at once discards the held one.
/// - Other messages (command results, metrics) wait in a short FIFO while the window is full, and are dropped —
///   and counted — when it is full too or when the broker is away (a metrics snapshot is superseded; a command
///   result is not kept for a broker that is not there).
///
/// Owned by the ``Outbox``, on the loop thread. Nothing here runs on the data path: the outbox only asks
/// ``isEmpty`` when an acknowledgement frees a slot.
struct ControlQueue {
    /// How many non-retained messages may wait for the window.
    static let transientCapacity = 256

    struct Message {
        var topic: String
        var payload: [UInt8]
        var retain: Bool
    }

    /// Latest payload per retained topic, and the order topics were first held in.
    private var retained: [String: [UInt8]] = [:]
    private var retainedOrder: [String] = []
    /// Non-retained messages, oldest first.
    private var transient: [Message] = []
    private var transientHead = 0

    /// Control messages dropped: non-retained ones the window, the queue and the broker could not take, and any
    /// the broker can never take.
    private(set) var dropped: UInt64 = 0

    var isEmpty: Bool { self.retainedOrder.isEmpty && self.transientHead == self.transient.count }

    /// Messages held now.
    var count: Int { self.retainedOrder.count + self.transient.count - self.transientHead }

    /// Whether a non-retained message must wait behind held ones (command results keep their order).
    var hasTransient: Bool { self.transientHead < self.transient.count }

    /// A retained topic was published: a value held for it is stale now.
    mutating func published(retainedTopic topic: String) {
        guard self.retained.removeValue(forKey: topic) != nil else { return }
        self.retainedOrder.removeAll { $0 == topic }
    }

    /// Holds `message`, which the broker refused.
    ///
    /// - Parameters:
    ///   - windowFull: whether it was refused for a full in-flight window (rather than no connection).
    /// - Returns: whether it is held; `false` means it was dropped (and counted).
    @discardableResult
    mutating func hold(_ message: Message, windowFull: Bool) -> Bool {
        if message.retain {
            if self.retained.updateValue(message.payload, forKey: message.topic) == nil {
                self.retainedOrder.append(message.topic)
            }
            return true
        }
        guard windowFull, self.transient.count - self.transientHead < Self.transientCapacity else {
            self.dropped &+= 1
            return false
        }
        self.transient.append(message)
        return true
    }

    /// Counts `message` as dropped: the broker can never take it (too large, an invalid topic).
    mutating func discard(_ message: Message) {
        self.dropped &+= 1
    }

    /// The next message to try: retained state first (it is what a late subscriber sees), then the FIFO.
    func next() -> Message? {
        if let topic = self.retainedOrder.first, let payload = self.retained[topic] {
            return Message(topic: topic, payload: payload, retain: true)
        }
        guard self.transientHead < self.transient.count else { return nil }
        return self.transient[self.transientHead]
    }

    /// Removes what ``next()`` returned, once it was published.
    mutating func removeNext() {
        if let topic = self.retainedOrder.first {
            self.retainedOrder.removeFirst()
            self.retained[topic] = nil
            return
        }
        guard self.transientHead < self.transient.count else { return }
        self.transientHead += 1
        if self.transientHead == self.transient.count {
            self.transient.removeAll(keepingCapacity: true)
            self.transientHead = 0
        }
    }

    /// The broker went away: waiting non-retained messages are dropped (and counted); retained state stays.
    mutating func dropTransient() {
        self.dropped &+= UInt64(self.transient.count - self.transientHead)
        self.transient.removeAll(keepingCapacity: true)
        self.transientHead = 0
    }
}
