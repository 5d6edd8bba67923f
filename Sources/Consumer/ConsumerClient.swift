import EventLoop
import Logging
import MQTT

/// The consumer core on the event loop: one MQTT subscription to `P/+/+/#` at QoS 1, every message through
/// ``ConsumerCore``, events to ``onEvent``. The MQTT client reconnects (and re-subscribes) by itself, so a broker
/// restart is a `.broker(connected: false)` and later `true`, nothing more.
public final class ConsumerClient {
    public let loop: EventLoop
    public private(set) var core: ConsumerCore
    let client: MQTTClient
    let logger: Logger
    var flushTimer: TimerHandle?
    /// Called on the loop thread for every event.
    public var onEvent: ((ConsumerEvent) -> Void)?

    /// - Throws: ``MQTTError`` when libmosquitto rejects the options (unreadable TLS files, bad port).
    public init(options: MQTTClient.Options, prefix: String, loop: EventLoop, logger: Logger) throws(MQTTError) {
        self.loop = loop
        self.logger = logger
        self.core = ConsumerCore(prefix: prefix)
        self.client = try MQTTClient(options: options, eventLoop: loop, logger: logger)
        self.client.onMessage = { [weak self] message in
            guard let self else { return }
            let events = self.core.receive(topic: message.topic, payload: message.payload, now: Self.now)
            for event in events { self.onEvent?(event) }
        }
        self.client.onConnectionEvent = { [weak self] event in
            guard let self else { return }
            switch event {
            case .connected:
                self.onEvent?(.broker(connected: true, error: nil))
            case .disconnected(let error, _):
                self.onEvent?(.broker(connected: false, error: error.map { "\($0)" }))
            }
        }
    }

    /// Seconds on the monotonic clock.
    public static var now: Double { Double(MonotonicInstant.now.nanoseconds) / 1e9 }

    public var counters: ConsumerCounters { self.core.counters }

    /// Subscribes and connects.
    ///
    /// - Throws: ``MQTTError`` for an invalid prefix (a topic filter libmosquitto refuses) or a closed client.
    public func start() throws(MQTTError) {
        try self.client.subscribe(self.core.subscription, qos: 1)
        try self.client.start()
        self.flushTimer = try? self.loop.scheduleTimer(after: .milliseconds(250), repeating: .milliseconds(250)) {
            [weak self] in
            guard let self else { return }
            let events = self.core.flush(now: Self.now)
            for event in events { self.onEvent?(event) }
        }
    }

    /// Disconnects and releases the client.
    public func close() {
        if let timer = self.flushTimer { self.loop.cancel(timer) }
        self.flushTimer = nil
        self.client.disconnect()
        self.client.close()
    }
}
