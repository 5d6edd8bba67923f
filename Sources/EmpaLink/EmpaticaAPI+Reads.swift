/// Notification reads deferred to the owner's batch tick (SPEC §19).
///
/// With ``EmpaticaAPI/defersNotificationReads`` on, the sockets queue notifications and the owner calls
/// ``EmpaticaAPI/drainNotifications()`` at its tick. When a tick finds nothing and the owner stops its timer, it calls
/// ``EmpaticaAPI/armNotificationWakeups()``: the next notification then wakes the loop once and calls
/// ``EmpaticaAPI/onNotificationsPending``, which restarts the tick. Each notification keeps the time the kernel
/// queued it, so deferring the read does not move its timestamp.
extension EmpaticaAPI {
    /// Reads every notification queued on every connected device's sockets, decoding each as it would have been on
    /// arrival. Delegates are called from here.
    ///
    /// - Returns: the number of notifications read.
    @discardableResult
    public func drainNotifications() -> Int {
        // One system call learns which sockets hold data; only those are read.
        self.notificationReadiness?.poll()
        var total = 0
        for device in self.devicesByPath.values { total += device.drainNotifications() }
        return total
    }

    /// Makes the next notification on any socket wake the loop (and call ``onNotificationsPending``).
    public func armNotificationWakeups() {
        for device in self.devicesByPath.values { device.armNotificationWakeups() }
    }

    func notificationsPending() {
        self.onNotificationsPending?()
    }
}
