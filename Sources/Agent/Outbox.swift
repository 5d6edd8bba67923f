#if canImport(Glibc)
import Glibc
#endif
import Config
import EventLoop
import Logging
import MQTT
import Spool

/// Where formatted messages go (SPEC §11): the broker when it can take them, the spool when it cannot, and a
/// counted drop only when the spool refuses too. The loop never waits on the broker or the disk here.
///
/// - `offline` mode: live messages go straight to the broker; refused ones (not connected, in-flight window
///   full) are appended to the spool. While a stream has spooled records, its live records go behind them so
///   per-stream order holds.
/// - `always` mode: every message is written ahead into the spool and published from it, leaving it only after
///   the broker's acknowledgement.
///
/// Replay runs every 100 ms while connected, oldest first, at most `replay_rate` messages per second, within the
/// in-flight window; a record is acknowledged in the spool only after PUBACK (QoS ≥ 1). Replayed messages are
/// the exact bytes that were formatted live.
final class Outbox {
    let mqtt: MQTTClient
    let qos: Int
    let logger: Logger
    let spool: Spool?
    let writeAhead: Bool
    let loop: EventLoop
    var replayTimer: TimerHandle?

    private(set) var published: UInt64 = 0
    private(set) var acknowledged: UInt64 = 0
    private(set) var spooled: UInt64 = 0
    private(set) var replayed: UInt64 = 0
    /// ``replayed`` when the spool last released freed memory.
    private var replayedAtLastTrim: UInt64 = 0
    private(set) var dropped: UInt64 = 0
    private(set) var oversized: UInt64 = 0
    /// Control-plane messages the broker could not take at once.
    private(set) var control = ControlQueue()
    private var flushingControl = false

    init(mqtt: MQTTClient, qos: Int, spool: Spool?, mode: AgentConfiguration.SpoolMode, loop: EventLoop,
         logger: Logger) {
        self.mqtt = mqtt
        self.qos = qos
        self.logger = logger
        self.spool = spool
        self.writeAhead = spool != nil && mode == .always
        self.loop = loop
        mqtt.onAcknowledgement = { [unowned self] _, outcome in
            if outcome.isDelivered { self.acknowledged &+= 1 }
            if !self.control.isEmpty { self.flushControl() }
        }
        spool?.onReplayReady = { [weak self] in self?.replay() }
        spool?.onWriteError = { [logger] line in logger.error(line) }
    }

    /// The spool key of a device's stream (`nil` without a spool).
    func key(serial: String, stream: StreamKind) -> SpoolStreamKey? {
        self.spool?.streamKey(serial + "/" + stream.rawValue)
    }

    /// Publishes `payload`'s bytes on `topic` (hot path: no allocation on the way to the broker).
    func publish(topic: UnsafePointer<CChar>, key: SpoolStreamKey?, payload: JSONBuffer) {
        guard !payload.overflowed else {
            self.oversized &+= 1
            return
        }
        if let spool = self.spool, let key, self.writeAhead || spool.pendingCount(for: key) > 0 {
            self.append(spool, key: key, topic: topic, payload: payload)
            return
        }
        do {
            try self.mqtt.publish(topic: topic, payload: payload.bytes, qos: self.qos)
            self.published &+= 1
        } catch {
            if let spool = self.spool, let key {
                self.append(spool, key: key, topic: topic, payload: payload)
            } else {
                self.dropped &+= 1
            }
        }
    }

    func append(_ spool: Spool, key: SpoolStreamKey, topic: UnsafePointer<CChar>, payload: JSONBuffer) {
        let topicBytes = UnsafeRawBufferPointer(start: topic, count: strlen(topic))
        switch spool.append(key: key, topic: topicBytes, message: payload.bytes, qos: UInt8(self.qos)) {
        case .appended:
            self.spooled &+= 1
            if self.replayTimer == nil { self.armReplay() }
        case .dropped:
            self.dropped &+= 1
        }
    }

    /// Publishes a control-plane message (status, devices, metrics, command results). Not spooled; what the broker
    /// cannot take now waits in ``control`` (see ``ControlQueue``): retained state topics keep their latest value
    /// until it is published, other messages wait briefly for the window or are dropped and counted.
    func publish(topic: String, text: String, retain: Bool) {
        let message = ControlQueue.Message(topic: topic, payload: Array(text.utf8), retain: retain)
        if retain {
            self.control.published(retainedTopic: topic)
        } else if self.control.hasTransient {
            // Behind the results already waiting, so that command results keep their order.
            self.control.hold(message, windowFull: self.mqtt.state == .connected)
            return
        }
        do {
            try self.mqtt.publish(topic: topic, payload: message.payload, qos: self.qos, retain: retain)
            self.published &+= 1
        } catch where Self.mayPassLater(error) {
            self.control.hold(message, windowFull: error.code == .inflightFull)
        } catch {
            self.control.discard(message)
            self.logger.warn("cannot publish \(topic): \(error.message)")
        }
    }

    /// Whether a refused publish may succeed later (the window frees, the broker returns), as opposed to a
    /// message the broker can never take (too large, an invalid topic).
    static func mayPassLater(_ error: MQTTError) -> Bool {
        [MQTTError.Code.inflightFull, .notConnected, .connectionLost, .tls].contains(error.code)
    }

    /// Publishes held control-plane messages while the window has room; called when an acknowledgement frees a
    /// slot and when the broker connects.
    func flushControl() {
        guard !self.flushingControl else { return }
        self.flushingControl = true
        defer { self.flushingControl = false }
        while let message = self.control.next() {
            do {
                try self.mqtt.publish(topic: message.topic, payload: message.payload, qos: self.qos,
                                      retain: message.retain)
                self.published &+= 1
                self.control.removeNext()
            } catch where Self.mayPassLater(error) {
                return
            } catch {
                self.control.discard(message)
                self.control.removeNext()
                self.logger.warn("cannot publish \(message.topic): \(error.message)")
            }
        }
    }

    // MARK: Replay

    /// Whether the broker is connected (replay may run).
    var brokerUp = false

    func brokerConnected() {
        self.brokerUp = true
        self.flushControl()
        self.armReplay()
    }

    /// Runs the replay tick while the broker is up and the spool holds anything; an empty spool costs no
    /// wake-ups.
    func armReplay() {
        guard self.brokerUp, let spool = self.spool, self.replayTimer == nil, spool.unacknowledged > 0 else { return }
        self.replayTimer = try? self.loop.scheduleTimer(after: .milliseconds(100), repeating: .milliseconds(100)) {
            [weak self] in self?.replay()
        }
        self.replay()
    }

    func brokerDisconnected() {
        self.brokerUp = false
        self.control.dropTransient()
        if let timer = self.replayTimer { self.loop.cancel(timer) }
        self.replayTimer = nil
        // In-flight replays may never be acknowledged now: they become pending again (duplicates are detectable
        // by sid/seq).
        self.spool?.rewindReplay()
    }

    /// Hands spooled records to the broker within the in-flight window and the replay rate.
    func replay() {
        guard let spool = self.spool, self.replayTimer != nil, self.mqtt.state == .connected else { return }
        if spool.unacknowledged == 0 {
            // Everything spooled has been acknowledged: stop ticking until something is spooled again.
            if let timer = self.replayTimer { self.loop.cancel(timer) }
            self.replayTimer = nil
            if self.replayed != self.replayedAtLastTrim {
                // A replay ran: what it allocated is free now; hand it back (not after every write-ahead ack).
                self.replayedAtLastTrim = self.replayed
                spool.releaseFreedMemory()
            }
            return
        }
        let free = self.mqtt.options.maxInflight - self.mqtt.inflightCount
        guard free > 0 else { return }
        for record in spool.nextForReplay(limit: free) {
            do {
                let id = record.id
                try self.mqtt.publish(topic: record.topicString, payload: record.message, qos: Int(record.qos),
                                      retain: record.retain) { [weak self, weak spool] outcome in
                    guard outcome.isDelivered else { return }
                    spool?.acknowledge(id)
                    self?.acknowledged &+= 1
                    if self?.control.isEmpty == false { self?.flushControl() }
                }
                self.replayed &+= 1
                self.published &+= 1
            } catch {
                spool.rewindReplay()
                return
            }
        }
    }

    func close() {
        if let timer = self.replayTimer { self.loop.cancel(timer) }
        self.replayTimer = nil
        self.spool?.synchronize()
        self.spool?.close()
    }
}
