import CMosquitto

extension MQTTClient {
    /// Subscribes to a topic filter now (when connected) and after every reconnect; messages arrive at
    /// ``onMessage``.
    ///
    /// - Parameters:
    ///   - topicFilter: e.g. `empalink/agent-1/cmd`.
    ///   - qos: the maximum QoS to receive at.
    ///   - onGranted: called once with the QoS the broker granted (≥ 0x80 when refused), on the first SUBACK.
    /// - Throws: ``MQTTError/Code/invalidArgument`` for a malformed filter or QoS; ``MQTTError/Code/closed``.
    public func subscribe(_ topicFilter: String, qos: Int, onGranted: ((Int) -> Void)? = nil) throws(MQTTError) {
        self.eventLoop.assertInEventLoop()
        guard self.handle != nil else { throw MQTTError(.closed, "the MQTT client is closed") }
        guard (0...2).contains(qos) else { throw MQTTError(.invalidArgument, "QoS \(qos) is not 0, 1 or 2") }
        guard mosquitto_sub_topic_check(topicFilter) == MOSQ_ERR_SUCCESS.rawValue else {
            throw MQTTError(.invalidArgument, "invalid topic filter \"\(topicFilter)\"")
        }
        self.subscriptions.removeAll { $0.topic == topicFilter }
        self.subscriptions.append((topicFilter, qos))
        guard self.state == .connected else { return }
        var mid: CInt = 0
        let result = self.callLibrary { mosquitto_subscribe($0, &mid, topicFilter, CInt(qos)) }
        guard result == MOSQ_ERR_SUCCESS.rawValue else { throw MQTTError.mosquitto(result, "subscribe") }
        if let onGranted { self.subscribeCallbacks[mid] = onGranted }
        self.updateInterest()
    }
}
