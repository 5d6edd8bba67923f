/// One spooled message handed out for replay: what the agent publishes again, byte-identical to its live form.
public struct SpoolRecord: Equatable, Sendable {
    /// The record's sequence number: pass it to ``Spool/acknowledge(_:)`` after the broker's PUBACK.
    public var id: UInt64
    /// When it was appended, microseconds since 1970.
    public var timestamp: Int64
    /// The (device, stream) key it was appended under.
    public var key: SpoolStreamKey
    public var topic: [UInt8]
    public var message: [UInt8]
    public var qos: UInt8
    public var retain: Bool

    /// The topic as text.
    public var topicString: String { String(decoding: self.topic, as: UTF8.self) }
}
