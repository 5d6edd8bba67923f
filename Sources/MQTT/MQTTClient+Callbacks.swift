#if canImport(Glibc)
import Glibc
#endif
import CMosquitto
import Logging

/// libmosquitto's callbacks are C function pointers; each finds its client through the handle's user data
/// (an unretained reference: the client outlives its handle, which it destroys in ``MQTTClient/close()``).
extension MQTTClient {
    func installCallbacks(_ handle: OpaquePointer) {
        mosquitto_connect_v5_callback_set(handle) { _, userData, reasonCode, flags, properties in
            guard let client = MQTTClient.from(userData) else { return }
            client.sendQuota = MQTTClient.sendQuota(client.options, connack: properties)
            client.didReceiveConnack(reasonCode: reasonCode, flags: flags)
        }
        mosquitto_disconnect_v5_callback_set(handle) { _, userData, result, _ in
            let savedErrno = errno
            MQTTClient.from(userData)?.didDisconnect(result: result, savedErrno: savedErrno)
        }
        mosquitto_publish_v5_callback_set(handle) { _, userData, mid, reasonCode, _ in
            MQTTClient.from(userData)?.didComplete(mid: mid, reasonCode: reasonCode)
        }
        mosquitto_message_v5_callback_set(handle) { _, userData, message, properties in
            guard let client = MQTTClient.from(userData), let message else { return }
            client.onMessage?(MQTTMessage(message, properties: properties))
        }
        mosquitto_subscribe_v5_callback_set(handle) { _, userData, mid, count, granted, _ in
            guard let client = MQTTClient.from(userData) else { return }
            let qos = count > 0 ? granted.map { Int($0[0]) } ?? -1 : -1
            client.subscribeCallbacks.removeValue(forKey: mid)?(qos)
        }
        self.setLibraryLog(handle, enabled: true)
    }

    /// Turns libmosquitto's log callback on or off.
    ///
    /// While a callback is set libmosquitto formats every log line (one per packet) into a `malloc`ed buffer, so
    /// it is on only while connecting (where OpenSSL's reason for a failed handshake arrives only through the
    /// log) or when the logger wants `debug`.
    func setLibraryLog(_ handle: OpaquePointer, enabled: Bool) {
        guard enabled else {
            mosquitto_log_callback_set(handle, nil)
            return
        }
        mosquitto_log_callback_set(handle) { _, userData, level, text in
            guard let client = MQTTClient.from(userData), let text else { return }
            client.didLog(level: level, text: text)
        }
    }

    static func from(_ userData: UnsafeMutableRawPointer?) -> MQTTClient? {
        guard let userData else { return nil }
        return Unmanaged<MQTTClient>.fromOpaque(userData).takeUnretainedValue()
    }

    /// How many QoS ≥ 1 messages libmosquitto lets out before their acknowledgements: our window, less on MQTT 5
    /// when the broker's CONNACK asks for less (Receive Maximum; mosquitto's `max_inflight_messages`, 20 by
    /// default). Messages beyond it wait in libmosquitto until a PUBACK arrives.
    static func sendQuota(_ options: Options, connack properties: OpaquePointer?) -> Int {
        var quota = max(options.maxInflight, 1)
        if options.protocolVersion == .v5, let properties {
            var receiveMaximum: UInt16 = 0
            if mosquitto_property_read_int16(
                properties, Int32(MQTT_PROP_RECEIVE_MAXIMUM.rawValue), &receiveMaximum, false
            ) != nil, receiveMaximum > 0 {
                quota = min(quota, Int(receiveMaximum))
            }
        }
        return quota
    }

    /// CONNACK: accepted, or refused with a reason kept for the disconnect that follows.
    func didReceiveConnack(reasonCode: CInt, flags: CInt) {
        self.raise(reasonCode == 0 ? .connackAccepted : .connackRefused(self.refusal(reasonCode)))
    }

    /// "connection refused: not authorised" from a 3.1.1 CONNACK code or an MQTT 5 reason code.
    func refusal(_ code: CInt) -> MQTTError {
        let text: String
        switch self.options.protocolVersion {
        case .v311: text = mosquitto_connack_string(code).map { String(cString: $0) } ?? "code \(code)"
        case .v5: text = mosquitto_reason_string(code).map { String(cString: $0) } ?? "reason code \(code)"
        }
        var reason = MQTTError.sentenceFragment(text)
        let prefix = "connection refused: "
        if reason.hasPrefix(prefix) { reason.removeFirst(prefix.count) }
        return MQTTError(.connectionRefused, prefix + reason, reasonCode: code)
    }

    /// The connection (or the attempt) ended; libmosquitto closes the socket right after this callback.
    func didDisconnect(result: CInt, savedErrno: CInt) {
        self.raise(.connectionLost(result: result, errno: savedErrno))
    }

    /// QoS 0 written, PUBACK or PUBCOMP received.
    func didComplete(mid: Int32, reasonCode: Int32) {
        guard let entry = self.pending.removeValue(forKey: mid) else {
            // During `mosquitto_publish` a QoS 0 message can be written before its id is known to us.
            if self.publishInProgress { self.earlyOutcomes.append((mid, reasonCode)) }
            return
        }
        self.report(mid: mid, entry: entry, outcome: MQTTClient.outcome(qos: entry.qos, reasonCode: reasonCode))
    }

    static func outcome(qos: UInt8, reasonCode: Int32) -> MQTTPublishOutcome {
        if qos == 0 { return .sent }
        if reasonCode < 0x80 { return .acknowledged(reasonCode: reasonCode) }
        let reason = mosquitto_reason_string(reasonCode).map { String(cString: $0) } ?? "reason code \(reasonCode)"
        return .rejected(reasonCode: reasonCode, reason: MQTTError.sentenceFragment(reason))
    }

    /// Delivers one message's outcome to its own callback or to ``onAcknowledgement``.
    func report(mid: Int32, entry: PendingPublish, outcome: MQTTPublishOutcome) {
        if outcome.isDelivered { self.deliveredCount += 1 }
        if let callback = entry.callback {
            callback(outcome)
        } else {
            self.onAcknowledgement?(mid, outcome)
        }
    }

    /// libmosquitto's log: errors are kept as the likely cause of the next failure (OpenSSL's reason for a
    /// failed handshake arrives only here); everything goes to the logger at `debug`.
    func didLog(level: CInt, text: UnsafePointer<CChar>) {
        if level == MOSQ_LOG_ERR {
            self.lastLibraryError = String(cString: text)
        }
        self.logger.debug("libmosquitto: \(String(cString: text))")
    }
}
