/// How a device's notification sockets were read (metrics; SPEC §19).
public struct NotificationReadStatistics: Sendable, Equatable {
    /// Notifications read from `AcquireNotify` sockets.
    public var notifications: UInt64 = 0
    /// Times the loop woke up for a socket's readability: once per notification when read eagerly
    /// (`batch_ms = 0`), once per quiet spell when reads are deferred to the batch tick.
    public var wakeups: UInt64 = 0
    /// Batch-tick drains that read at least one notification.
    public var drains: UInt64 = 0
    /// Notifications without a kernel arrival time (`SO_TIMESTAMPNS`), stamped with their read time instead.
    public var readTimeFallbacks: UInt64 = 0
    /// Drains that found a socket's queue within a factor of two of its limit (the stream then reads eagerly).
    public var highWaterDrains: UInt64 = 0
    /// Notifications longer than the MTU (cut to it), and descriptors a peer passed with them (closed).
    public var truncated: UInt64 = 0
    public var passedDescriptors: UInt64 = 0
    /// Receive system calls on the sockets (`recvmsg`, or `recvmmsg` taking up to 16 at once), including those that
    /// found a queue empty: with deferred reads and a readiness set, about one per socket that had data at a tick.
    public var receiveCalls: UInt64 = 0

    public init() {}

    static func += (lhs: inout NotificationReadStatistics, rhs: NotificationReadStatistics) {
        lhs.notifications &+= rhs.notifications
        lhs.wakeups &+= rhs.wakeups
        lhs.drains &+= rhs.drains
        lhs.readTimeFallbacks &+= rhs.readTimeFallbacks
        lhs.highWaterDrains &+= rhs.highWaterDrains
        lhs.truncated &+= rhs.truncated
        lhs.passedDescriptors &+= rhs.passedDescriptors
        lhs.receiveCalls &+= rhs.receiveCalls
    }
}
