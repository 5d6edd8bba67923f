#if canImport(Glibc)
import Glibc
#endif
import CMosquitto
import EventLoop
import Logging
import Posix

/// An MQTT client over libmosquitto, driven by an ``EventLoop/EventLoop`` instead of libmosquitto's own thread.
///
/// The loop owns the client: create it, call every member and receive every callback on the loop's thread.
/// libmosquitto's socket is registered with the loop (readable — or only its hang-up while ``defersReads`` —
/// and writable only while `mosquitto_want_write` says so), a timer runs `mosquitto_loop_misc` (keepalive,
/// retries), and a reconnect timer with exponential backoff and jitter replaces `mosquitto_loop_forever`. See
/// `Docs/mqtt-client.md` for what still blocks and what allocates.
///
/// Lifetime: ``start()`` connects; ``disconnect()`` sends DISCONNECT (so the broker discards the will) and stops
/// reconnecting; ``close()`` releases the handle — without a DISCONNECT, so the broker publishes the will. A
/// client dropped without ``close()`` is released the same way by `deinit` (on the loop thread).
public final class MQTTClient {
    public let options: Options
    let eventLoop: EventLoop
    let logger: Logger

    /// The libmosquitto handle (`struct mosquitto *`); `nil` once closed.
    var handle: OpaquePointer?
    /// Where the connection stands.
    public var state: MQTTConnectionState { self.lifecycle.state }
    /// The connection lifecycle: changed only by ``raise(_:)``, which executes its actions.
    var lifecycle = MQTTConnectionLifecycle()
    /// Events raised while another event's actions execute, handled after them (run to completion).
    var lifecycleQueue: [MQTTConnectionLifecycle.Event] = []
    var lifecycleRunning = false

    /// The socket's registration with the loop, while libmosquitto has a socket we watch.
    var registration: IORegistration?
    var registeredInterest: IOEvents = []
    /// See ``defersReads``.
    var readsDeferred = false
    /// QoS ≥ 1 messages libmosquitto sends before it needs acknowledgements (set from each CONNACK).
    var sendQuota = Int.max
    /// Whether ``coalescingWrites(_:)`` holds the socket corked.
    var socketCorked = false
    var miscTimer: TimerHandle?
    var reconnectTimer: TimerHandle?
    /// The delay the reconnect timer was last armed with, reported with the failure that armed it.
    var retryDelay: Duration = .zero

    /// Messages handed to libmosquitto whose outcome is not known yet, by message id.
    var pending: [Int32: PendingPublish] = [:]
    /// Outcomes libmosquitto reported during a `mosquitto_publish` call, before its message id was known.
    var earlyOutcomes: [(mid: Int32, reasonCode: Int32)] = []
    var publishInProgress = false
    /// The MQTT 5 property list for publishes without expiry (content type), built once.
    var publishProperties: OpaquePointer?
    /// Property lists with a message expiry, built once per distinct expiry.
    var expiryProperties: [UInt32: OpaquePointer] = [:]

    /// Subscriptions, renewed after every reconnect (the session starts clean).
    var subscriptions: [(topic: String, qos: Int)] = []
    var subscribeCallbacks: [Int32: (Int) -> Void] = [:]

    /// The last error line libmosquitto logged in this attempt (OpenSSL's reason for a failed handshake).
    var lastLibraryError: String?

    /// Called on every connection change.
    public var onConnectionEvent: ((MQTTConnectionEvent) -> Void)?
    /// Called for every message received on a subscription.
    public var onMessage: ((borrowing MQTTMessage) -> Void)?
    /// Called with the outcome of messages published without their own callback: one closure for all, so the
    /// hot path publishes without allocating a closure context per message.
    public var onAcknowledgement: ((Int32, MQTTPublishOutcome) -> Void)?

    /// Messages taken by ``publish(topic:payload:qos:retain:messageExpirySeconds:onAck:)`` since creation.
    public internal(set) var publishedCount: UInt64 = 0
    /// Messages that ended ``MQTTPublishOutcome/sent`` or ``MQTTPublishOutcome/acknowledged(reasonCode:)``.
    public internal(set) var deliveredCount: UInt64 = 0
    /// Connections accepted since creation (the first one included).
    public internal(set) var connectionCount: UInt64 = 0
    /// `mosquitto_loop_read` calls since creation: one per socket wake-up for input, one or a few per
    /// ``readDeferred()`` (for tests and metrics).
    public internal(set) var socketReadCount: UInt64 = 0

    /// Messages awaiting their outcome; at most ``Options/maxInflight``.
    public var inflightCount: Int {
        self.eventLoop.assertInEventLoop()
        return self.pending.count
    }

    /// Creates and configures the libmosquitto handle; does not connect (see ``start()``).
    ///
    /// - Parameters:
    ///   - options: broker, credentials, TLS, will, limits.
    ///   - eventLoop: the loop that drives the client; call this on its thread.
    ///   - logger: receives libmosquitto's log lines at `debug` and connection changes at `info`/`warn`.
    /// - Throws: ``MQTTError``: ``MQTTError/Code/invalidArgument`` for options libmosquitto rejects,
    ///   ``MQTTError/Code/tls`` for unreadable CA or certificate files.
    public init(options: Options, eventLoop: EventLoop, logger: Logger) throws(MQTTError) {
        eventLoop.assertInEventLoop()
        _ = MosquittoLibrary.initialized
        self.options = options
        self.eventLoop = eventLoop
        self.logger = logger.with("COMPONENT", "mqtt")
        guard let handle = mosquitto_new(options.clientID, true, nil) else {
            throw MQTTError(.library, "mosquitto_new failed for client id \"\(options.clientID)\" (out of memory)")
        }
        self.handle = handle
        self.pending.reserveCapacity(max(options.maxInflight, 1))
        self.earlyOutcomes.reserveCapacity(4)
        self.lifecycleQueue.reserveCapacity(8)
        do {
            try self.configure(handle)
        } catch {
            self.releaseHandle()
            throw error
        }
        mosquitto_user_data_set(handle, Unmanaged.passUnretained(self).toOpaque())
        self.installCallbacks(handle)
    }

    deinit {
        // Without callbacks: nobody is left to receive them.
        self.releaseHandle()
    }

    /// Releases the handle: the broker sees the connection drop without DISCONNECT and publishes the will.
    ///
    /// Every message still awaiting its outcome ends ``MQTTPublishOutcome/abandoned``. Inside a libmosquitto
    /// callback (a connection event, a message, an acknowledgement) the release waits until libmosquitto
    /// returns, and inside ``onConnectionEvent`` until the event's transition has run to completion. Calling it
    /// again does nothing.
    public func close() {
        self.eventLoop.assertInEventLoop()
        self.raise(.close)
    }

    /// Stops watching the socket, cancels the timers, destroys the handle and frees the property lists.
    func releaseHandle() {
        self.dropRegistration()
        self.cancelMiscTimer()
        self.cancelReconnectTimer()
        self.destroyHandle()
    }

    /// Destroys the handle and frees the property lists.
    func destroyHandle() {
        if let handle = self.handle {
            mosquitto_destroy(handle)
            self.handle = nil
        }
        if self.publishProperties != nil {
            mosquitto_property_free_all(&self.publishProperties)
        }
        for list in self.expiryProperties.values {
            var owned: OpaquePointer? = list
            mosquitto_property_free_all(&owned)
        }
        self.expiryProperties.removeAll()
    }

    /// Runs one libmosquitto call that may invoke callbacks; a ``close()`` they request waits until the outermost
    /// call has returned (``MQTTConnectionLifecycle/Event/libraryEntered``).
    ///
    /// - Returns: the call's `MOSQ_ERR_*` result, or `MOSQ_ERR_INVAL` when the client is closed.
    func callLibrary(_ body: (OpaquePointer) -> CInt) -> CInt {
        guard let handle = self.handle else { return CInt(MOSQ_ERR_INVAL.rawValue) }
        self.raise(.libraryEntered)
        let result = body(handle)
        self.raise(.libraryReturned)
        return result
    }
}

/// A message handed to libmosquitto and its acknowledgement callback.
struct PendingPublish {
    let qos: UInt8
    let callback: ((MQTTPublishOutcome) -> Void)?
}
