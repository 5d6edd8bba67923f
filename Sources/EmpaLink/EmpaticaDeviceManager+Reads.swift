import BlueZ

/// Reading the notification sockets per notification or per batch tick (SPEC §19).
extension EmpaticaDeviceManager {
    /// How the device's notification sockets were read, over every connection so far.
    public var notificationReads: NotificationReadStatistics {
        var total = self.retiredReads
        for stream in self.streams { total += Self.statistics(of: stream) }
        return total
    }

    static func statistics(of stream: NotificationStream) -> NotificationReadStatistics {
        var statistics = NotificationReadStatistics()
        statistics.notifications = stream.count
        statistics.wakeups = stream.readinessWakeups
        statistics.drains = stream.drains
        statistics.readTimeFallbacks = stream.readTimeFallbacks
        statistics.highWaterDrains = stream.highWaterDrains
        statistics.truncated = stream.truncated
        statistics.passedDescriptors = stream.passedDescriptors
        statistics.receiveCalls = stream.receiveCalls
        return statistics
    }

    /// Applies the API's read mode to one stream, and tells the API when a deferred one has data waiting.
    func configureReads(_ stream: NotificationStream) {
        stream.onPending = { [weak self] in self?.api?.notificationsPending() }
        stream.setReadMode((self.api?.defersNotificationReads ?? false) ? .deferred : .eager)
    }

    /// Reads what every socket has queued. - Returns: the number of notifications read.
    func drainNotifications() -> Int {
        var total = 0
        // Indices, not `for … in`: a notification's handler may close the streams (a disconnect) and replace the
        // array while it is iterated.
        var index = 0
        while index < self.streams.count {
            total += self.streams[index].drainIfQueued()
            index += 1
        }
        return total
    }

    func armNotificationWakeups() {
        for stream in self.streams { stream.arm() }
    }

    func applyReadMode() {
        for stream in self.streams { self.configureReads(stream) }
    }
}
