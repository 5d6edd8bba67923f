import CMosquitto

extension MQTTClient {
    /// Replaces the Last Will sent with the next CONNECT (libmosquitto keeps the will on its handle and sends it
    /// with every connection, reconnects included).
    ///
    /// The broker keeps the will of the connection that is up, so call this between connections: before
    /// ``start()`` and from ``onConnectionEvent`` on `.disconnected`, which runs before the reconnect timer can fire.
    /// A client whose will changes per connection (fleet presence carries the connection's session) needs that.
    ///
    /// - Throws: ``MQTTError/Code/closed``; a libmosquitto error for a topic or payload it refuses.
    public func setWill(_ will: Will) throws(MQTTError) {
        self.eventLoop.assertInEventLoop()
        guard let handle = self.handle else { throw MQTTError(.closed, "the MQTT client is closed") }
        try self.configureWill(handle, will)
    }

    /// Subscribes on the current connection only — unlike ``subscribe(_:qos:onGranted:)`` it is not renewed after
    /// a reconnect — and calls `onGranted` with the granted QoS (≥ 0x80 when refused) when its SUBACK arrives.
    ///
    /// For a client that must know when each connection's subscription is in place: call it on every
    /// `.connected`.
    ///
    /// - Throws: ``MQTTError/Code/invalidArgument`` for a malformed filter or QoS; a libmosquitto error when not
    ///   connected; ``MQTTError/Code/closed``.
    public func subscribeOnCurrentConnection(_ topicFilter: String, qos: Int,
                                             onGranted: @escaping (Int) -> Void) throws(MQTTError) {
        self.eventLoop.assertInEventLoop()
        guard self.handle != nil else { throw MQTTError(.closed, "the MQTT client is closed") }
        guard (0...2).contains(qos) else { throw MQTTError(.invalidArgument, "QoS \(qos) is not 0, 1 or 2") }
        guard mosquitto_sub_topic_check(topicFilter) == MOSQ_ERR_SUCCESS.rawValue else {
            throw MQTTError(.invalidArgument, "invalid topic filter \"\(topicFilter)\"")
        }
        var mid: CInt = 0
        let result = self.callLibrary { mosquitto_subscribe($0, &mid, topicFilter, CInt(qos)) }
        guard result == MOSQ_ERR_SUCCESS.rawValue else { throw MQTTError.mosquitto(result, "subscribe") }
        self.subscribeCallbacks[mid] = onGranted
        self.updateInterest()
    }
}
