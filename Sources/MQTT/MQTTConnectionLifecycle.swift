/// The connection lifecycle of an ``MQTTClient`` as one pure state machine: events in, actions out (SPEC §15).
///
/// It knows no libmosquitto, no socket and no clock: ``handle(_:)`` takes what happened (the application called
/// ``MQTTClient/start()``, libmosquitto reported a CONNACK, the reconnect timer fired, …), moves to the next state
/// and returns what the client must do, in order. The client executes the actions and feeds their outcomes back
/// as events, so every transition can be tested exhaustively without a broker.
///
/// libmosquitto runs its callbacks inside library calls, and the handle must not be destroyed while one is on the
/// stack: the machine counts the calls in progress (``Event/libraryEntered``, ``Event/libraryReturned``) and defers
/// a ``Event/close`` until the outermost has returned.
struct MQTTConnectionLifecycle: Hashable, Sendable {
    /// The backoff exponent stops here: ``MQTTClient/nextBackoff(failedAttempts:)`` caps its shift at 30, so
    /// counting further changes nothing but would make the state space infinite.
    static let maximumFailedAttempts = 30

    /// Why an attempt or a connection ended, for the one-line error the client reports.
    enum Cause: Hashable, Sendable {
        /// The broker refused the CONNACK of this attempt.
        case refused(MQTTError)
        /// libmosquitto's `MOSQ_ERR_*` or MQTT 5 reason code, `errno` as seen at the failure, and whether the
        /// connection had been accepted (“connection lost”) or not (“cannot connect”).
        case library(result: CInt, errno: CInt, wasConnected: Bool)
    }

    /// What the client reports through ``MQTTClient/onConnectionEvent``.
    enum Report: Hashable, Sendable {
        /// ``MQTTConnectionEvent/connected``: the client also counts and logs the connection.
        case connected
        /// The attempt or connection ended; a retry is scheduled after the delay the reconnect timer was armed with.
        case retrying(Cause)
        /// ``MQTTClient/disconnect()`` completed: ``MQTTConnectionEvent/disconnected(error:retryIn:)`` with no error.
        case stopped
        /// ``MQTTClient/close()`` ended a live client: disconnected with ``MQTTError/Code/closed``.
        case closed
    }

    enum Event: Hashable, Sendable {
        /// ``MQTTClient/start()``.
        case start
        /// ``MQTTClient/disconnect()``.
        case disconnectRequested
        /// ``MQTTClient/close()``.
        case close
        /// `mosquitto_connect_bind_async` / `mosquitto_reconnect_async` returned success: the socket is connecting.
        case connectionOpened
        /// The connect call failed; `hostStored` is whether libmosquitto kept host and port for a reconnect
        /// (not after `MOSQ_ERR_INVAL` or `MOSQ_ERR_NOMEM`).
        case openFailed(result: CInt, errno: CInt, hostStored: Bool)
        /// CONNACK with reason 0.
        case connackAccepted
        /// CONNACK with a refusal, reported when the connection then closes.
        case connackRefused(MQTTError)
        /// libmosquitto's disconnect callback, or a socket the loop cannot watch.
        case connectionLost(result: CInt, errno: CInt)
        /// A `mosquitto_loop_read`/`write`/`misc` call is about to run: a later ``loopCallFailed(result:errno:)``
        /// counts only if no ``connectionLost(result:errno:)`` arrived in between.
        case loopCallStarting
        /// A loop call returned an error, possibly without the disconnect callback (libmosquitto 2.0 returns
        /// handshake failures straight from `loop_read`), or the socket hung up.
        case loopCallFailed(result: CInt, errno: CInt)
        /// The reconnect timer fired (the client has already forgotten the one-shot timer).
        case reconnectTimerFired
        /// `mosquitto_disconnect_v5` returned success / an error (no socket to send it on).
        case disconnectSent
        case disconnectFailed
        /// A call into libmosquitto, which may run callbacks, begins / returns.
        case libraryEntered
        case libraryReturned
    }

    enum Action: Hashable, Sendable {
        /// `mosquitto_connect_bind_async` (first attempt) or `mosquitto_reconnect_async`; the client answers with
        /// ``Event/connectionOpened`` or ``Event/openFailed(result:errno:hostStored:)``.
        case openConnection(reconnect: Bool)
        /// `mosquitto_disconnect_v5`; answered with ``Event/disconnectSent`` or ``Event/disconnectFailed``.
        case sendDisconnect
        /// Arms the one-shot reconnect timer with the backoff for this many failed attempts.
        case armReconnectTimer(failedAttempts: Int)
        case cancelReconnectTimer
        /// The repeating `mosquitto_loop_misc` timer (keepalive, retries).
        case armMiscTimer
        case cancelMiscTimer
        /// Watches libmosquitto's current socket (readable, writable while it wants to write).
        case watchSocket
        case dropSocketWatch
        /// Renews every subscription (the session starts clean).
        case resubscribe
        /// QoS 0 messages still queued die with the socket: they end ``MQTTPublishOutcome/lost``.
        case failUnsentQoS0
        /// Every message awaiting its outcome ends ``MQTTPublishOutcome/abandoned``.
        case abandonPending
        /// Destroys the libmosquitto handle and frees the property lists.
        case releaseHandle
        case report(Report)
    }

    private(set) var state: MQTTConnectionState = .idle
    /// Failed attempts since the last accepted connection: the backoff exponent.
    private(set) var failedAttempts = 0
    /// Whether libmosquitto has host and port stored, so the next attempt is a `reconnect_async`.
    private(set) var hostStored = false
    /// The CONNACK refusal of the current attempt.
    private(set) var refusal: MQTTError?
    /// Calls into libmosquitto in progress.
    private(set) var libraryDepth = 0
    /// ``Event/close`` arrived inside a library call.
    private(set) var closePending = false
    /// The disconnect callback reported this loop call's failure already.
    private(set) var lossReported = false

    /// Whether a socket may exist: connecting, connected or disconnecting.
    var hasConnection: Bool {
        switch self.state {
        case .connecting, .connected, .disconnecting: true
        case .idle, .waitingToReconnect, .closed: false
        }
    }

    /// Moves to the next state.
    ///
    /// - Parameter event: what happened.
    /// - Returns: what the client must do, in order; empty for an event that does not apply in this state (a late
    ///   timer, a CONNACK after ``Event/disconnectRequested``, anything after close). Never allocates then.
    mutating func handle(_ event: Event) -> [Action] {
        if self.state == .closed { return [] }
        switch event {
        case .libraryEntered:
            self.libraryDepth += 1
            return []
        case .libraryReturned:
            guard self.libraryDepth > 0 else { return [] }
            self.libraryDepth -= 1
            guard self.libraryDepth == 0, self.closePending else { return [] }
            self.closePending = false
            return self.close()
        case .close:
            guard self.libraryDepth == 0 else {
                self.closePending = true
                return []
            }
            return self.close()
        case .start:
            guard self.state == .idle else { return [] }
            return [.armMiscTimer] + self.attempt()
        case .reconnectTimerFired:
            guard self.state == .waitingToReconnect else { return [] }
            return self.attempt()
        case .connectionOpened:
            guard self.state == .connecting else { return [] }
            self.hostStored = true
            return [.watchSocket]
        case .openFailed(let result, let errno, let hostStored):
            guard self.state == .connecting else { return [] }
            self.hostStored = hostStored
            return self.ended(result: result, errno: errno)
        case .connackAccepted:
            guard self.state == .connecting else { return [] }
            self.state = .connected
            self.failedAttempts = 0
            return [.resubscribe, .report(.connected)]
        case .connackRefused(let error):
            self.refusal = error
            return []
        case .connectionLost(let result, let errno):
            self.lossReported = true
            return self.ended(result: result, errno: errno)
        case .loopCallStarting:
            self.lossReported = false
            return []
        case .loopCallFailed(let result, let errno):
            guard !self.lossReported, self.hasConnection else { return [] }
            return self.ended(result: result, errno: errno)
        case .disconnectRequested:
            switch self.state {
            case .connecting, .connected:
                self.state = .disconnecting
                return [.sendDisconnect]
            case .waitingToReconnect:
                return [.cancelReconnectTimer] + self.stopped()
            case .idle, .disconnecting, .closed:
                return []
            }
        case .disconnectSent:
            guard self.state == .disconnecting else { return [] }
            return [.watchSocket]
        case .disconnectFailed:
            // No socket to send it on: already down.
            guard self.state == .disconnecting else { return [] }
            return self.stopped()
        }
    }

    /// One connection attempt: TCP connect (non-blocking); TLS and CONNECT follow on the loop.
    private mutating func attempt() -> [Action] {
        self.state = .connecting
        self.refusal = nil
        // `lossReported` stays: a loop call whose disconnect callback restarted the client (start() inside the
        // stopped report) must not end the new attempt with the old socket's failure.
        // libmosquitto closes its old socket and may get the same number back: forget the old registration.
        return [.dropSocketWatch, .openConnection(reconnect: self.hostStored)]
    }

    /// The attempt or connection is over: report it, then retry after a backoff unless stopping.
    private mutating func ended(result: CInt, errno: CInt) -> [Action] {
        switch self.state {
        case .disconnecting:
            return self.stopped()
        case .idle, .waitingToReconnect, .closed:
            return []
        case .connecting, .connected:
            let cause = self.refusal.map(Cause.refused)
                ?? .library(result: result, errno: errno, wasConnected: self.state == .connected)
            let failures = self.failedAttempts
            self.failedAttempts = min(failures + 1, MQTTConnectionLifecycle.maximumFailedAttempts)
            self.state = .waitingToReconnect
            return [
                .dropSocketWatch, .failUnsentQoS0, .armReconnectTimer(failedAttempts: failures),
                .report(.retrying(cause)),
            ]
        }
    }

    /// ``MQTTClient/disconnect()`` is complete: an idle client needs no wake-ups (``Event/start`` re-arms them).
    private mutating func stopped() -> [Action] {
        self.state = .idle
        return [.dropSocketWatch, .failUnsentQoS0, .cancelMiscTimer, .report(.stopped)]
    }

    private mutating func close() -> [Action] {
        let wasLive = self.state != .idle
        self.state = .closed
        self.closePending = false
        var actions: [Action] = [
            .dropSocketWatch, .cancelMiscTimer, .cancelReconnectTimer, .releaseHandle, .abandonPending,
        ]
        if wasLive { actions.append(.report(.closed)) }
        return actions
    }
}
