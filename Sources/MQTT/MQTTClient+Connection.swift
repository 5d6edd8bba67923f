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
    /// throws for a closed client. Calling it while started does nothing.
    public func start() throws(MQTTError) {
        self.eventLoop.assertInEventLoop()
        guard self.handle != nil, self.state != .closed else { throw MQTTError(.closed, "the MQTT client is closed") }
        self.raise(.start)
    }

    /// Sends DISCONNECT (the broker then discards the will) and stops reconnecting.
    ///
    /// The ``MQTTConnectionEvent/disconnected(error:retryIn:)`` event with no error follows once the connection
    /// is closed. Messages at QoS ≥ 1 still awaiting acknowledgement keep waiting in libmosquitto; ``close()``
    /// abandons them.
    public func disconnect() {
        self.eventLoop.assertInEventLoop()
        self.raise(.disconnectRequested)
    }

    /// Hands one event to the lifecycle and executes its actions; an event raised meanwhile (by an action, or by a
    /// callback an action runs) is queued and handled after them, so every transition runs to completion.
    func raise(_ event: MQTTConnectionLifecycle.Event) {
        guard !self.lifecycleRunning else {
            self.lifecycleQueue.append(event)
            return
        }
        self.lifecycleRunning = true
        var next = event
        while true {
            for action in self.lifecycle.handle(next) {
                self.perform(action)
            }
            guard !self.lifecycleQueue.isEmpty else { break }
            next = self.lifecycleQueue.removeFirst()
        }
        self.lifecycleRunning = false
    }

    /// Executes one action of the lifecycle.
    func perform(_ action: MQTTConnectionLifecycle.Action) {
        switch action {
        case .openConnection(let reconnect):
            self.openConnection(reconnect: reconnect)
        case .sendDisconnect:
            let result = self.callLibrary { mosquitto_disconnect_v5($0, 0, nil) }
            self.raise(result == MOSQ_ERR_SUCCESS.rawValue ? .disconnectSent : .disconnectFailed)
        case .armReconnectTimer(let failedAttempts):
            self.cancelReconnectTimer()
            let delay = self.nextBackoff(failedAttempts: failedAttempts)
            self.retryDelay = delay
            self.reconnectTimer = try? self.eventLoop.scheduleTimer(after: delay) { [weak self] in
                guard let self else { return }
                self.reconnectTimer = nil
                self.raise(.reconnectTimerFired)
            }
        case .cancelReconnectTimer:
            self.cancelReconnectTimer()
        case .armMiscTimer:
            guard self.miscTimer == nil else { return }
            // Keepalive: loop_misc sends PINGREQ once `keepalive` has passed without traffic and notices a missing
            // PINGRESP. A quarter of the keepalive (1–10 s) keeps the ping well inside the broker's 1.5 × keepalive
            // limit while an idle agent wakes rarely (SPEC §14: ≤ 1 wake-up per second when nothing happens).
            let period = Duration.seconds(Int64(min(max(self.options.keepaliveSeconds / 4, 1), 10)))
            self.miscTimer = try? self.eventLoop.scheduleTimer(after: period, repeating: period) {
                [weak self] in
                self?.runMisc()
            }
        case .cancelMiscTimer:
            self.cancelMiscTimer()
        case .watchSocket:
            self.updateInterest()
        case .dropSocketWatch:
            self.dropRegistration()
        case .resubscribe:
            for subscription in self.subscriptions {
                let result = mosquitto_subscribe(self.handle, nil, subscription.topic, CInt(subscription.qos))
                if result != MOSQ_ERR_SUCCESS.rawValue {
                    self.logger.warn(
                        "cannot renew subscription \(subscription.topic): \(MQTTError.libraryText(result))"
                    )
                }
            }
        case .failUnsentQoS0:
            self.failUnsentQoS0()
        case .abandonPending:
            let abandoned = self.pending
            self.pending.removeAll()
            for (mid, entry) in abandoned.sorted(by: { $0.key < $1.key }) {
                self.report(mid: mid, entry: entry, outcome: .abandoned)
            }
        case .releaseHandle:
            self.destroyHandle()
        case .report(let report):
            self.report(report)
        }
    }

    /// Reports a connection change through ``onConnectionEvent``.
    func report(_ report: MQTTConnectionLifecycle.Report) {
        switch report {
        case .connected:
            self.connectionCount += 1
            self.logger.info("connected to \(self.options.host):\(self.options.port)")
            if let handle = self.handle, !self.logger.isEnabled(.debug) {
                self.setLibraryLog(handle, enabled: false)
            }
            self.onConnectionEvent?(.connected)
        case .retrying(let cause):
            let error = self.failure(cause)
            let delay = self.retryDelay
            self.logger.warn(
                "MQTT \(self.options.host):\(self.options.port): \(error.message); "
                    + "retrying in \(MQTTClient.seconds(delay))"
            )
            self.onConnectionEvent?(.disconnected(error: error, retryIn: delay))
        case .stopped:
            self.logger.info("disconnected from \(self.options.host):\(self.options.port)")
            self.onConnectionEvent?(.disconnected(error: nil, retryIn: nil))
        case .closed:
            self.onConnectionEvent?(.disconnected(error: MQTTError(.closed, "closed"), retryIn: nil))
        }
    }

    func cancelReconnectTimer() {
        if let timer = self.reconnectTimer {
            self.eventLoop.cancel(timer)
            self.reconnectTimer = nil
        }
    }

    func cancelMiscTimer() {
        if let timer = self.miscTimer {
            self.eventLoop.cancel(timer)
            self.miscTimer = nil
        }
    }

    /// One connection attempt: TCP connect (non-blocking), TLS and CONNECT follow on the loop.
    func openConnection(reconnect: Bool) {
        self.lastLibraryError = nil
        if let handle = self.handle { self.setLibraryLog(handle, enabled: true) }
        let options = self.options
        var savedErrno: CInt = 0
        let result = self.callLibrary { handle in
            let result =
                reconnect
                ? mosquitto_reconnect_async(handle)
                : mosquitto_connect_bind_async(
                    handle, options.host, CInt(options.port), CInt(options.keepaliveSeconds), nil
                )
            savedErrno = errno
            return result
        }
        guard result != MOSQ_ERR_SUCCESS.rawValue else {
            self.raise(.connectionOpened)
            return
        }
        // Nothing was stored after INVAL or NOMEM: the next attempt must pass host and port again.
        let hostStored = result != MOSQ_ERR_INVAL.rawValue && result != MOSQ_ERR_NOMEM.rawValue
        self.raise(.openFailed(result: result, errno: savedErrno, hostStored: hostStored))
    }

    /// The socket is ready: let libmosquitto read and write as much as it can without blocking.
    func socketReady(_ events: IOEvents) {
        guard self.handle != nil, let registration = self.registration else { return }
        if !events.isDisjoint(with: [.readable, .readHangup, .hangup, .error]) {
            self.socketReadCount &+= 1
            if self.messagesWaitForQuota {
                // The PUBACKs this read takes each let a held message out: corked, they leave in one segment
                // when the read is done instead of one segment (and one wake-up of the broker) each.
                self.coalescingWrites { self.loopCall { mosquitto_loop_read($0, 1) } }
            } else {
                self.loopCall { mosquitto_loop_read($0, 1) }
            }
        }
        if self.registration == registration && (events.contains(.writable) || self.wantsWrite) {
            self.loopCall { mosquitto_loop_write($0, 1) }
        }
        if self.registration == registration && !events.isDisjoint(with: [.hangup, .error]) {
            // The peer is gone but libmosquitto did not notice (a handshake in progress): never spin on it.
            let savedErrno = errno
            self.raise(.loopCallStarting)
            self.raise(.loopCallFailed(result: CInt(MOSQ_ERR_CONN_LOST.rawValue), errno: savedErrno))
        }
        self.updateInterest()
    }

    /// Keepalive (PINGREQ, timeout) and QoS retries, every quarter keepalive while a connection exists.
    func runMisc() {
        guard self.lifecycle.hasConnection else { return }
        // A PINGRESP waiting unread must count before loop_misc decides the broker is gone.
        if self.readsDeferred { self.readAvailable() }
        guard self.lifecycle.hasConnection else { return }
        self.loopCall(ignoring: CInt(MOSQ_ERR_NO_CONN.rawValue)) { mosquitto_loop_misc($0) }
        self.updateInterest()
    }

    /// While true and connected, the loop does not wake up for the broker's input: ``readDeferred()`` reads it,
    /// so a caller that runs a periodic tick anyway (the agent's batch timer) takes the acknowledgements of its
    /// publishes, and any message on a subscription, once per tick instead of in a wake-up of their own.
    ///
    /// Acknowledgements and messages then wait until the next ``readDeferred()``. What still wakes the loop at
    /// once: the broker closing the connection (`EPOLLRDHUP`, watched on its own) or resetting it (`EPOLLHUP`,
    /// `EPOLLERR`), and output that does not fit the socket (`EPOLLOUT`). The keepalive timer reads first, so a
    /// PINGRESP waiting unread is never taken for a dead broker. While connecting or disconnecting the socket is
    /// read on arrival whatever this says. Setting it false watches input again at once; whatever arrived in the
    /// meantime is read on the loop's next pass.
    public var defersReads: Bool {
        get { self.readsDeferred }
        set {
            self.eventLoop.assertInEventLoop()
            guard newValue != self.readsDeferred else { return }
            self.readsDeferred = newValue
            self.updateInterest()
        }
    }

    /// Whether input waits for ``readDeferred()`` now: asked for, connected, and every message handed over is on
    /// its way. Messages beyond the send quota (the broker's Receive Maximum) leave only as PUBACKs arrive, so
    /// while any wait the socket is read on arrival, as without deferral.
    var deferringReads: Bool {
        self.readsDeferred && self.state == .connected && self.pending.count <= self.sendQuota
    }

    /// Reads what the broker has sent, without blocking, while ``defersReads`` holds: acknowledgements and
    /// messages are reported (through their callbacks) before it returns. Does nothing otherwise.
    public func readDeferred() {
        self.eventLoop.assertInEventLoop()
        guard self.readsDeferred else { return }
        self.readAvailable()
        self.updateInterest()
    }

    /// At most this many `mosquitto_loop_read` calls per ``readDeferred()``: each takes at least one packet (or
    /// what there is of it), so a bound only against a broker that keeps sending.
    static let maximumDeferredReadPasses = 1024

    /// `mosquitto_loop_read` until the socket has nothing queued (or is gone).
    ///
    /// One call may stop before `EAGAIN`: libmosquitto 2.0 bounds it by its queue length and tests `errno` after
    /// every packet without clearing it first (hence the reset). The peek after each call says whether more wait.
    func readAvailable() {
        guard let registration = self.registration, self.state == .connected else { return }
        for _ in 0..<MQTTClient.maximumDeferredReadPasses {
            errno = 0
            self.socketReadCount &+= 1
            self.loopCall { mosquitto_loop_read($0, 1) }
            guard self.registration == registration, self.state == .connected,
                  MQTTClient.hasQueuedInput(registration.fileDescriptor) else { return }
        }
    }

    /// Whether a read of `socket` would not block: bytes queued, or the end of the stream (`MSG_PEEK`, so nothing
    /// is taken from libmosquitto).
    static func hasQueuedInput(_ socket: FileDescriptor) -> Bool {
        var byte: UInt8 = 0
        return recv(socket.rawValue, &byte, 1, CInt(MSG_PEEK) | CInt(MSG_DONTWAIT)) >= 0
    }

    /// Runs `mosquitto_loop_read`/`write`/`misc`; a failure the disconnect callback did not report ends the
    /// attempt all the same (libmosquitto 2.0 returns handshake failures straight from `loop_read`).
    func loopCall(ignoring ignored: CInt = CInt(MOSQ_ERR_SUCCESS.rawValue), _ body: (OpaquePointer) -> CInt) {
        self.raise(.loopCallStarting)
        var savedErrno: CInt = 0
        let result = self.callLibrary { handle in
            let result = body(handle)
            savedErrno = errno
            return result
        }
        guard result != MOSQ_ERR_SUCCESS.rawValue, result != ignored, self.handle != nil else { return }
        self.raise(.loopCallFailed(result: result, errno: savedErrno))
    }

    /// Whether libmosquitto has output queued (or a TLS handshake wants to write).
    var wantsWrite: Bool {
        guard let handle = self.handle else { return false }
        return mosquitto_want_write(handle)
    }

    /// Registers libmosquitto's current socket (readable — only its hang-up while reads are deferred — plus
    /// writable while it wants to write).
    func updateInterest() {
        guard let handle = self.handle else { return }
        let socket = mosquitto_socket(handle)
        guard socket >= 0, self.lifecycle.hasConnection else {
            self.dropRegistration()
            return
        }
        var interest: IOEvents = self.deferringReads ? .readHangup : .readable
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
            self.raise(.connectionLost(result: CInt(MOSQ_ERR_ERRNO.rawValue), errno: error.rawValue))
        }
    }

    func dropRegistration() {
        if let registration = self.registration {
            self.eventLoop.deregister(registration)
            self.registration = nil
            self.registeredInterest = []
        }
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
    func failure(_ cause: MQTTConnectionLifecycle.Cause) -> MQTTError {
        let result: CInt
        let errorNumber: CInt
        let wasConnected: Bool
        switch cause {
        case .refused(let refusal):
            return refusal
        case .library(let code, let savedErrno, let connected):
            result = code
            errorNumber = savedErrno
            wasConnected = connected
        }
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
            let reason = errorNumber == 0 ? "socket error" : Errno(rawValue: errorNumber).description
            let verb = wasConnected ? "connection lost" : "cannot connect"
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
            let verb = wasConnected ? "connection lost" : "cannot connect"
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
    ///
    /// - Parameter failedAttempts: failed attempts since the last accepted connection.
    func nextBackoff(failedAttempts: Int) -> Duration {
        let initial = max(self.options.reconnectInitial.saturatingMilliseconds, 1)
        let maximum = max(self.options.reconnectMaximum.saturatingMilliseconds, initial)
        let shift = min(max(failedAttempts, 0), 30)
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
