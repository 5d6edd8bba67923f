/// What the consumer core hands its tool, in order, on the loop thread.
public enum ConsumerEvent: Sendable {
    /// The broker connection came up (subscription renewed) or went down.
    case broker(connected: Bool, error: String?)
    case agentStatus(board: String, online: Bool)
    case devices(board: String, [String: SeenDevice])
    case deviceStatus(board: String, device: String, DeviceState)
    case metrics(board: String, BoardMetrics)
    /// A stream message, de-duplicated and in `seq` order for its (device, stream, `sid`).
    case data(board: String, device: String, DataMessage)
    /// `count` messages of (device, stream, `sid`) from `seq` on never arrived.
    case gap(board: String, device: String, stream: ConsumerStream, sid: String, seq: Int, count: Int)
}

/// The consumer core's drop and gap counters (shown by the tools and in their logs).
public struct ConsumerCounters: Equatable, Sendable {
    public var received = 0
    /// Payloads that do not fit the contract (bad JSON, missing fields, wrong types or ranges).
    public var malformed = 0
    /// Topics under the prefix that are not for consumers (commands, fleet).
    public var ignored = 0
    public var duplicates = 0
    /// Messages declared missing (sum of gap counts).
    public var missing = 0
    public var gaps = 0

    public init() {}
}
