#if canImport(Glibc)
import Glibc
#endif
import CMosquitto
import Posix

extension MQTTClient {
    /// The largest payload MQTT can carry (the remaining-length field's limit, less a minimal header).
    public static let maximumPayloadSize = 268_435_455 - 4

    /// Publishes one message; its outcome arrives exactly once, through `onAck` or ``onAcknowledgement``.
    ///
    /// The hot-path form: the topic is a preformatted NUL-terminated buffer and the payload is borrowed, so the
    /// call allocates nothing in Swift (pass `onAck: nil` and use ``onAcknowledgement``; a capturing closure
    /// allocates its context). libmosquitto copies topic and payload into its own packet (`malloc` per message)
    /// before returning, so both buffers may be reused at once.
    ///
    /// - Parameters:
    ///   - topic: NUL-terminated UTF-8 topic.
    ///   - payload: the bytes to send.
    ///   - qos: 0, 1 or 2.
    ///   - retain: whether the broker keeps it as the topic's retained message.
    ///   - messageExpirySeconds: MQTT 5 message expiry; `nil` for none (ignored on 3.1.1).
    ///   - onAck: this message's outcome callback; `nil` to use ``onAcknowledgement``.
    /// - Returns: the message id libmosquitto assigned.
    /// - Throws: ``MQTTError``: ``MQTTError/Code/notConnected`` unless connected, ``MQTTError/Code/inflightFull``
    ///   at ``Options/maxInflight`` outstanding messages, ``MQTTError/Code/payloadTooLarge``,
    ///   ``MQTTError/Code/invalidArgument`` for a bad topic or QoS. Nothing was sent when it throws.
    @discardableResult
    public func publish(
        topic: UnsafePointer<CChar>,
        payload: UnsafeRawBufferPointer,
        qos: Int,
        retain: Bool = false,
        messageExpirySeconds: UInt32? = nil,
        onAck: ((MQTTPublishOutcome) -> Void)? = nil
    ) throws(MQTTError) -> Int32 {
        self.eventLoop.assertInEventLoop()
        guard self.handle != nil, self.state == .connected else {
            throw MQTTError(.notConnected, "not connected to the MQTT broker (\(self.state))")
        }
        guard (0...2).contains(qos) else { throw MQTTError(.invalidArgument, "QoS \(qos) is not 0, 1 or 2") }
        guard self.pending.count < self.options.maxInflight else {
            throw MQTTError(.inflightFull, "\(self.pending.count) messages await acknowledgement (max_inflight)")
        }
        guard payload.count <= MQTTClient.maximumPayloadSize else {
            throw MQTTError(.payloadTooLarge, "payload of \(payload.count) bytes exceeds MQTT's limit")
        }
        let properties = self.options.protocolVersion == .v5 ? try self.properties(expiry: messageExpirySeconds) : nil
        var mid: CInt = 0
        self.publishInProgress = true
        self.earlyOutcomes.removeAll(keepingCapacity: true)
        let result = self.callLibrary { handle in
            mosquitto_publish_v5(
                handle, &mid, topic, CInt(payload.count), payload.baseAddress, CInt(qos), retain, properties
            )
        }
        self.publishInProgress = false
        guard result == MOSQ_ERR_SUCCESS.rawValue else {
            self.updateInterest()
            throw MQTTError.mosquitto(result, "publish")
        }
        self.publishedCount += 1
        let entry = PendingPublish(qos: UInt8(qos), callback: onAck)
        if let early = self.earlyOutcomes.first(where: { $0.mid == mid }) {
            let outcome = MQTTClient.outcome(qos: entry.qos, reasonCode: early.reasonCode)
            self.report(mid: mid, entry: entry, outcome: outcome)
        } else {
            self.pending[mid] = entry
        }
        self.updateInterest()
        return mid
    }

    /// Publishes one message; see ``publish(topic:payload:qos:retain:messageExpirySeconds:onAck:)``.
    ///
    /// The convenient form (it copies the topic into a C string).
    @discardableResult
    public func publish(
        topic: String,
        payload: some Collection<UInt8>,
        qos: Int,
        retain: Bool = false,
        messageExpirySeconds: UInt32? = nil,
        onAck: ((MQTTPublishOutcome) -> Void)? = nil
    ) throws(MQTTError) -> Int32 {
        let bytes = Array(payload)
        let result: Result<Int32, MQTTError> = topic.withCString { topicPointer in
            bytes.withUnsafeBytes { payloadBytes in
                do throws(MQTTError) {
                    return .success(
                        try self.publish(
                            topic: topicPointer, payload: payloadBytes, qos: qos, retain: retain,
                            messageExpirySeconds: messageExpirySeconds, onAck: onAck
                        )
                    )
                } catch {
                    return .failure(error)
                }
            }
        }
        return try result.get()
    }

    /// The MQTT 5 property list for a publish: the content type, plus a message expiry when asked for.
    /// Each distinct list is built once and kept until ``close()``.
    func properties(expiry: UInt32?) throws(MQTTError) -> OpaquePointer? {
        guard let expiry else { return self.publishProperties }
        if let list = self.expiryProperties[expiry] { return list }
        var list: OpaquePointer?
        if let contentType = self.options.contentType {
            try check(
                mosquitto_property_add_string(&list, Int32(MQTT_PROP_CONTENT_TYPE.rawValue), contentType),
                "content type"
            )
        }
        let result = mosquitto_property_add_int32(&list, Int32(MQTT_PROP_MESSAGE_EXPIRY_INTERVAL.rawValue), expiry)
        guard result == MOSQ_ERR_SUCCESS.rawValue else {
            mosquitto_property_free_all(&list)
            throw MQTTError.mosquitto(result, "message expiry")
        }
        self.expiryProperties[expiry] = list
        return list
    }
}

extension MQTTClient {
    /// Runs `body` with the broker socket corked (`TCP_CORK`): the publishes it makes leave in as few TCP segments
    /// as fit, when `body` returns, instead of one each (the socket has `TCP_NODELAY`). The agent's batch tick
    /// publishes through this, so the broker's acknowledgements come back together too. Inside another corked call
    /// it only runs `body`.
    public func coalescingWrites(_ body: () -> Void) {
        self.eventLoop.assertInEventLoop()
        guard !self.socketCorked, let handle = self.handle, self.lifecycle.hasConnection,
              case let socket = mosquitto_socket(handle), socket >= 0 else {
            body()
            return
        }
        let descriptor = FileDescriptor(rawValue: socket)
        guard (try? descriptor.setTCPCork(true)) != nil else {
            body()
            return
        }
        self.socketCorked = true
        body()
        self.socketCorked = false
        try? descriptor.setTCPCork(false)
    }

    /// Whether libmosquitto holds messages beyond the send quota (the broker's Receive Maximum): each PUBACK then
    /// lets one of them out, written at once from inside `mosquitto_loop_read`.
    var messagesWaitForQuota: Bool {
        self.state == .connected && self.pending.count > self.sendQuota
    }
}
