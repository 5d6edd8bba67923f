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

    /// Publishes a control-plane message (status, devices, metrics, command results). Not spooled: status and
    /// devices are republished on every reconnect, metrics are superseded.
    func publish(topic: String, text: String, retain: Bool) {
        do {
            try self.mqtt.publish(topic: topic, payload: Array(text.utf8), qos: self.qos, retain: retain)
            self.published &+= 1
        } catch {
            // Counted by MQTT state; nothing to keep.
        }
    }

    // MARK: Replay

    /// Whether the broker is connected (replay may run).
    var brokerUp = false

    func brokerConnected() {
        self.brokerUp = true
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
