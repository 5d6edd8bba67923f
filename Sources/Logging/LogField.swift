/// One structured field of a log event, such as `DEVICE=9ff167` or `STREAM=bvp`.
///
/// journald stores it as its own field (queryable with `journalctl DEVICE=9ff167`); the stderr backend prints
/// it as `key=value` after the message.
public struct LogField: Hashable, Sendable {
    public var key: String
    public var value: String

    public init(_ key: String, _ value: String) {
        self.key = key
        self.value = value
    }
}
