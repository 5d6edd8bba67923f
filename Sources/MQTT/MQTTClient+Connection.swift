#if canImport(Glibc)
import Glibc
#endif
import CMosquitto
import EventLoop
import Posix

extension MQTTClient {
    /// Starts connecting; from then on the client reconnects by itself until ``disconnect()`` or ``close()``.
    ///
    /// The outcome arrives through ``onConnectionEvent``; a failed attempt is retried with backoff, so this only
    /// throws for a closed client.
    public func start() throws(MQTTError) {
        self.eventLoop.assertInEventLoop()
        guard self.handle != nil, self.state != .closed else { throw MQTTError(.closed, "the MQTT client is closed") }
        guard self.state == .idle else { return }
        if self.miscTimer == nil {
            // Keepalive: loop_misc sends PINGREQ once `keepalive` has passed without traffic and notices a missing
            // PINGRESP. A quarter of the keepalive (1–10 s) keeps the ping well inside the broker's 1.5 × keepalive
            // limit while an idle agent wakes rarely (SPEC §14: ≤ 1 wake-up per second when nothing happens).
            let period = Duration.seconds(Int64(min(max(self.options.keepaliveSeconds / 4, 1), 10)))
            self.miscTimer = try? self.eventLoop.scheduleTimer(after: period, repeating: period) {
                [weak self] in
                self?.runMisc()
            }
        }
        self.attemptConnection()
    }

    /// Sends DISCONNECT (the broker then discards the will) and stops reconnecting.
    ///
    /// The ``MQTTConnectionEvent/disconnected(error:retryIn:)`` event with no error follows once the connection
    /// is closed. Messages at QoS ≥ 1 still awaiting acknowledgement keep waiting in libmosquitto; ``close()``
    /// abandons them.
    public func disconnect() {
        self.eventLoop.assertInEventLoop()
        switch self.state {
        case .connected, .connecting:
            self.state = .disconnecting
            let result = self.callLibrary { mosquitto_disconnect_v5($0, 0, nil) }
            if result != MOSQ_ERR_SUCCESS.rawValue && self.state == .disconnecting {
                // No socket to send it on: already down.
                self.finishDisconnect()
            } else {
                self.updateInterest()
            }
        case .waitingToReconnect:
            if let timer = self.reconnectTimer { self.eventLoop.cancel(timer) }
            self.reconnectTimer = nil
            self.finishDisconnect()
        case .idle, .disconnecting, .closed:
            return
        }
    }

    func finishDisconnect() {
        self.dropRegistration()
        if let timer = self.miscTimer {
            // An idle client needs no wake-ups; ``start()`` re-arms it.
            self.eventLoop.cancel(timer)
            self.miscTimer = nil
        }
        self.failUnsentQoS0()
        self.state = .idle
        self.logger.info("disconnected from \(self.options.host):\(self.options.port)")
        self.onConnectionEvent?(.disconnected(error: nil, retryIn: nil))
    }

    /// One connection attempt: TCP connect (non-blocking), TLS and CONNECT follow on the loop.
    func attemptConnection() {
        self.reconnectTimer = nil
        self.state = .connecting
        self.connackFailure = nil
        self.lastLibraryError = nil
        self.disconnectReported = false
        // libmosquitto closes its old socket and may get the same number back: forget the old registration.
        self.dropRegistration()
        if let handle = self.handle { self.setLibraryLog(handle, enabled: true) }
        let options = self.options
        let result = self.callLibrary { handle in
            if self.connectInitialised {
                return mosquitto_reconnect_async(handle)
            }
            return mosquitto_connect_bind_async(
                handle, options.host, CInt(options.port), CInt(options.keepaliveSeconds), nil
            )
        }
        let savedErrno = errno
        guard self.handle != nil, self.state == .connecting else { return }
        if result != MOSQ_ERR_SUCCESS.rawValue {
            if result == MOSQ_ERR_INVAL.rawValue || result == MOSQ_ERR_NOMEM.rawValue {
                // Nothing was stored: the next attempt must pass host and port again.
                self.connectInitialised = false
            } else {
                self.connectInitialised = true
            }
            self.disconnectErrno = savedErrno
            self.connectionEnded(result: result)
            return
        }
        self.connectInitialised = true
        self.updateInterest()
    }

    /// The socket is ready: let libmosquitto read and write as much as it can without blocking.
    func socketReady(_ events: IOEvents) {
        guard self.handle != nil, let registration = self.registration else { return }
        if !events.isDisjoint(with: [.readable, .readHangup, .hangup, .error]) {
            self.disconnectReported = false
            let result = self.callLibrary { mosquitto_loop_read($0, 1) }
            self.checkLoopResult(result)
        }
        if self.registration == registration && (events.contains(.writable) || self.wantsWrite) {
            self.disconnectReported = false
            let result = self.callLibrary { mosquitto_loop_write($0, 1) }
            self.checkLoopResult(result)
        }
        if self.registration == registration && !events.isDisjoint(with: [.hangup, .error]) {
            // The peer is gone but libmosquitto did not notice (a handshake in progress): never spin on it.
            self.disconnectReported = false
            self.checkLoopResult(CInt(MOSQ_ERR_CONN_LOST.rawValue))
        }
        self.updateInterest()
    }

    /// Keepalive (PINGREQ, timeout) and QoS retries, once a second while a connection exists.
    func runMisc() {
        switch self.state {
        case .connecting, .connected, .disconnecting:
            self.disconnectReported = false
            let result = self.callLibrary { mosquitto_loop_misc($0) }
            if result != MOSQ_ERR_NO_CONN.rawValue { self.checkLoopResult(result) }
            self.updateInterest()
        case .idle, .waitingToReconnect, .closed:
            return
        }
    }

    /// A loop call failed without libmosquitto's disconnect callback (libmosquitto 2.0 returns handshake
    /// failures straight from `loop_read`): end the attempt ourselves.
    func checkLoopResult(_ result: CInt) {
        guard result != MOSQ_ERR_SUCCESS.rawValue, !self.disconnectReported, self.handle != nil else { return }
        switch self.state {
        case .connecting, .connected, .disconnecting:
            self.disconnectErrno = errno
            self.connectionEnded(result: result)
        case .idle, .waitingToReconnect, .closed:
            return
        }
    }

    /// Whether libmosquitto has output queued (or a TLS handshake wants to write).
    var wantsWrite: Bool {
        guard let handle = self.handle else { return false }
        return mosquitto_want_write(handle)
    }

    /// Registers libmosquitto's current socket (readable, plus writable while it wants to write).
    func updateInterest() {
        guard let handle = self.handle else { return }
        let socket = mosquitto_socket(handle)
        guard socket >= 0, self.state == .connecting || self.state == .connected || self.state == .disconnecting
        else {
            self.dropRegistration()
            return
        }
        var interest: IOEvents = .readable
        if mosquitto_want_write(handle) { interest.insert(.writable) }
        if let registration = self.registration, registration.fileDescriptor.rawValue == socket {
            if interest != self.registeredInterest {
                do {
                    try self.eventLoop.reregister(registration, interest: interest)
                    self.registeredInterest = interest
                } catch {
                    self.logger.error("cannot watch the MQTT socket: \(error)")
                }
            }
            return
        }
        self.dropRegistration()
        do {
            let descriptor = FileDescriptor(rawValue: socket)
            self.registration = try self.eventLoop.register(descriptor, interest: interest) { [weak self] events in
                self?.socketReady(events)
            }
            self.registeredInterest = interest
        } catch {
            self.logger.error("cannot watch the MQTT socket: \(error)")
            self.connectionEnded(result: CInt(MOSQ_ERR_ERRNO.rawValue))
        }
    }

    func dropRegistration() {
        if let registration = self.registration {
            self.eventLoop.deregister(registration)
            self.registration = nil
            self.registeredInterest = []
        }
    }

    /// The attempt or connection is over: report it, then retry after a backoff unless we are stopping.
    func connectionEnded(result: CInt) {
        self.dropRegistration()
        self.failUnsentQoS0()
        switch self.state {
        case .disconnecting:
            self.finishDisconnect()
            return
        case .idle, .waitingToReconnect, .closed:
            return
        case .connecting, .connected:
            break
        }
        let error = self.failure(result)
        let delay = self.nextBackoff()
        self.failedAttempts += 1
        self.state = .waitingToReconnect
        self.reconnectTimer = try? self.eventLoop.scheduleTimer(after: delay) { [weak self] in
            guard let self, self.state == .waitingToReconnect else { return }
            self.attemptConnection()
        }
        self.logger.warn(
            "MQTT \(self.options.host):\(self.options.port): \(error.message); retrying in \(MQTTClient.seconds(delay))"
        )
        self.onConnectionEvent?(.disconnected(error: error, retryIn: delay))
    }

    /// QoS 0 messages still queued die with the socket (libmosquitto keeps only QoS ≥ 1 across reconnects).
    func failUnsentQoS0() {
        guard !self.pending.isEmpty else { return }
        var lost: [(Int32, PendingPublish)] = []
        for (mid, entry) in self.pending where entry.qos == 0 {
            lost.append((mid, entry))
        }
        for (mid, entry) in lost.sorted(by: { $0.0 < $1.0 }) {
            self.pending.removeValue(forKey: mid)
            self.report(mid: mid, entry: entry, outcome: .lost)
        }
    }

    /// The one-line cause of a failed attempt or a lost connection.
    func failure(_ result: CInt) -> MQTTError {
        if let refusal = self.connackFailure { return refusal }
        if result == MOSQ_ERR_TLS.rawValue
            || (self.lastLibraryError?.contains("OpenSSL") ?? false)
        {
            return MQTTError(.tls, "TLS: " + MQTTClient.openSSLReason(self.lastLibraryError), reasonCode: result)
        }
        if result >= 0x80 {
            // An MQTT 5 DISCONNECT from the broker: libmosquitto passes its reason code.
            let text = mosquitto_reason_string(result).map { String(cString: $0) } ?? "reason code \(result)"
            return MQTTError(
                .connectionLost, "disconnected by the broker: \(MQTTError.sentenceFragment(text))", reasonCode: result
            )
        }
        switch result {
        case CInt(MOSQ_ERR_SUCCESS.rawValue):
            return MQTTError(.connectionLost, "connection lost: the broker closed the connection", reasonCode: result)
        case CInt(MOSQ_ERR_ERRNO.rawValue):
            let reason = self.disconnectErrno == 0 ? "socket error" : Errno(rawValue: self.disconnectErrno).description
            let verb = self.state == .connected ? "connection lost" : "cannot connect"
            return MQTTError(.connectionLost, "\(verb): \(reason)", reasonCode: result)
        case CInt(MOSQ_ERR_CONN_LOST.rawValue):
            return MQTTError(.connectionLost, "connection lost: the broker closed the connection", reasonCode: result)
        case CInt(MOSQ_ERR_KEEPALIVE.rawValue):
            return MQTTError(
                .connectionLost, "connection lost: no answer from the broker within the keepalive", reasonCode: result
            )
        case CInt(MOSQ_ERR_EAI.rawValue):
            return MQTTError(.connectionLost, "cannot resolve \(self.options.host)", reasonCode: result)
        default:
            let verb = self.state == .connected ? "connection lost" : "cannot connect"
            return MQTTError.mosquitto(result, verb)
        }
    }

    /// OpenSSL's reason from libmosquitto's log line
    /// ("OpenSSL Error[0]: error:0A000086:SSL routines::certificate verify failed" → "certificate verify failed").
    static func openSSLReason(_ line: String?) -> String {
        guard let line, !line.isEmpty else { return "handshake failed" }
        if let colon = line.lastIndex(of: ":") {
            let reason = line[line.index(after: colon)...].drop { $0 == " " }
            if !reason.isEmpty { return String(reason) }
        }
        return line
    }

    /// Exponential backoff with "equal jitter": half the step fixed, half random, so a fleet restarted together
    /// does not reconnect in lockstep.
    func nextBackoff() -> Duration {
        let initial = max(self.options.reconnectInitial.saturatingMilliseconds, 1)
        let maximum = max(self.options.reconnectMaximum.saturatingMilliseconds, initial)
        let shift = min(self.failedAttempts, 30)
        let step = min(initial << shift, maximum)
        let half = step / 2
        return .milliseconds(half + Int64.random(in: 0...(step - half)))
    }

    static func seconds(_ duration: Duration) -> String {
        let milliseconds = duration.saturatingMilliseconds
        if milliseconds < 1000 { return "\(milliseconds) ms" }
        return "\(milliseconds / 1000).\(milliseconds % 1000 / 100) s"
    }
}

extension Duration {
    /// Whole milliseconds, clamped to `Int64`.
    var saturatingMilliseconds: Int64 {
        let (seconds, attoseconds) = self.components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return seconds < 0 ? .min : .max }
        return product &+ attoseconds / 1_000_000_000_000_000
    }
}
