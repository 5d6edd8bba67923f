/// A value a ``DeviceProfile`` writes to start a session.
public struct ProfileWrite: Sendable, Equatable {
    /// The characteristic, as its index in ``DeviceProfile/characteristics``.
    public var channel: Int
    public var bytes: [UInt8]
    /// A write request (acknowledged by the device) rather than a write command.
    public var withResponse: Bool

    public init(channel: Int, bytes: [UInt8], withResponse: Bool = true) {
        self.channel = channel
        self.bytes = bytes
        self.withResponse = withResponse
    }
}
