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
/// - `always` mode: every message is written ahead into the spool (appended in flight) and published live as soon
///   as the spool's writer has put it into its segment file (microseconds: ``WriteAheadStaging`` holds it until
///   then), so a message the broker may have is always on disk. Its PUBACK releases the spool record. Only what
///   was not acknowledged is replayed: after a broker outage (the connection's in-flight records are rewound)
///   or a crash (recovery finds them). While a stream has records waiting for replay its live records are
///   appended behind them, as in `offline` mode.
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
    /// MQTT ids of control-plane messages in flight. They may hold at most ``controlWindow`` slots of the in-flight
    /// window: a flood of commands, each answered on `cmd/result`, must not take the window from the wristbands'
    /// data (which would go to the spool and arrive late). Capacity reserved, so acknowledgements never allocate.
    private var controlInflight: Set<Int32> = []
    private var flushingControl = false
    /// `always` mode: messages appended in flight, waiting for the writer before their live publish.
    let staging = WriteAheadStaging()
    /// `always` mode: the spool id of each live message awaiting its PUBACK, by MQTT message id. Its capacity is
    /// reserved for the in-flight window, so steady state does not allocate.
    private(set) var liveRecords: [Int32: UInt64] = [:]
    /// Messages published live in `always` mode (also counted in ``published``).
    private(set) var publishedLive: UInt64 = 0

    init(mqtt: MQTTClient, qos: Int, spool: Spool?, mode: AgentConfiguration.SpoolMode, loop: EventLoop,
         logger: Logger) {
        self.mqtt = mqtt
        self.qos = qos
        self.logger = logger
        self.spool = spool
        self.writeAhead = spool != nil && mode == .always
        self.loop = loop
        if self.writeAhead { self.liveRecords.reserveCapacity(max(mqtt.options.maxInflight, 1)) }
        self.controlInflight.reserveCapacity(Self.controlWindow(maxInflight: mqtt.options.maxInflight))
        mqtt.onAcknowledgement = { [unowned self] mid, outcome in
            if outcome.isDelivered { self.acknowledged &+= 1 }
            self.controlInflight.remove(mid)
            if let id = self.liveRecords.removeValue(forKey: mid), outcome.isDelivered {
                // Not delivered (rejected, abandoned): it stays in flight, and the rewind at the disconnect or the
                // recovery after a restart sends it again.
                self.spool?.acknowledge(id)
            }
            if !self.control.isEmpty { self.flushControl() }
        }
        spool?.onReplayReady = { [weak self] in self?.replay() }
        spool?.onWritten = { [weak self] in self?.publishWritten() }
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
        if self.writeAhead, let spool = self.spool, let key {
            self.writeAheadAndPublish(spool, key: key, topic: topic, payload: payload)
            return
        }
        if let spool = self.spool, let key, spool.pendingCount(for: key) > 0 {
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

    /// `always` mode: appends the message in flight and stages it for its live publish once written; or, when it
    /// cannot go live now (no broker, its stream has records waiting for replay, staging full), appends it for
    /// replay.
    func writeAheadAndPublish(_ spool: Spool, key: SpoolStreamKey, topic: UnsafePointer<CChar>, payload: JSONBuffer) {
        guard self.brokerUp, self.mqtt.state == .connected, spool.replayPendingCount(for: key) == 0 else {
            self.append(spool, key: key, topic: topic, payload: payload)
            return
        }
        let topicBytes = UnsafeRawBufferPointer(start: topic, count: strlen(topic))
        switch spool.append(key: key, topic: topicBytes, message: payload.bytes, qos: UInt8(self.qos), inFlight: true) {
        case .appended(let id):
            self.spooled &+= 1
            guard self.staging.push(id: id, topic: topic, payload: payload.bytes) else {
                spool.returnToReplay(id)
                if self.replayTimer == nil { self.armReplay() }
                return
            }
            self.publishWritten()
        case .dropped:
            // The spool cannot take it (full ring, too large, closed): live only, like an agent without a spool.
            do {
                try self.mqtt.publish(topic: topic, payload: payload.bytes, qos: self.qos)
                self.published &+= 1
            } catch {
                self.dropped &+= 1
            }
        }
    }

    /// `always` mode: publishes the staged messages the spool's writer has written, oldest first. A message the
    /// broker refuses now (window full, connection gone) goes back to the spool for replay, and so does every one
    /// staged after it (they keep their order behind it).
    func publishWritten() {
        guard let spool = self.spool else { return }
        while let id = self.staging.firstID {
            guard spool.writtenBelow > id else {
                // Not written yet: wait for the writer's signal (unless it came meanwhile).
                if spool.requestWrittenNotification(beyond: id) { continue }
                return
            }
            guard spool.isInFlight(id) else {
                // Its write failed (or it was evicted): it is not on disk, so it is not published either; the
                // spool counted it as dropped.
                self.staging.removeFirst()
                continue
            }
            let sent: Bool = self.staging.withFirst { id, topic, payload in
                do {
                    let mid = try self.mqtt.publish(topic: topic, payload: payload, qos: self.qos)
                    if self.qos > 0 {
                        self.liveRecords[mid] = id
                    } else {
                        spool.acknowledge(id)  // QoS 0: nothing will acknowledge it
                    }
                    self.published &+= 1
                    self.publishedLive &+= 1
                    return true
                } catch {
                    return false
                }
            } ?? false
            if !sent {
                self.returnStagedToReplay(spool)
                return
            }
            self.staging.removeFirst()
        }
    }

    /// Hands every staged message back to the spool for replay.
    func returnStagedToReplay(_ spool: Spool) {
        while let id = self.staging.firstID {
            spool.returnToReplay(id)
            self.staging.removeFirst()
        }
        if self.replayTimer == nil { self.armReplay() }
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
        guard self.controlInflight.count < self.controlWindow else {
            // Its share of the window is taken: it waits like a message the full window refused.
            self.control.hold(message, windowFull: self.mqtt.state == .connected)
            return
        }
        do {
            let mid = try self.mqtt.publish(topic: topic, payload: message.payload, qos: self.qos, retain: retain)
            if self.qos > 0 { self.controlInflight.insert(mid) }
            self.published &+= 1
        } catch where Self.mayPassLater(error) {
            self.control.hold(message, windowFull: error.code == .inflightFull)
        } catch {
            self.control.discard(message)
            self.logger.warn("cannot publish \(topic): \(error.message)")
        }
    }

    /// How many in-flight slots control-plane messages may hold: a quarter of `mqtt.max_inflight`, at least one.
    static func controlWindow(maxInflight: Int) -> Int { max(1, maxInflight / 4) }

    var controlWindow: Int { Self.controlWindow(maxInflight: self.mqtt.options.maxInflight) }

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
        while self.controlInflight.count < self.controlWindow, let message = self.control.next() {
            do {
                let mid = try self.mqtt.publish(topic: message.topic, payload: message.payload, qos: self.qos,
                                                retain: message.retain)
                if self.qos > 0 { self.controlInflight.insert(mid) }
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
        guard self.brokerUp, let spool = self.spool, self.replayTimer == nil, !self.replayIdle(spool) else { return }
        self.replayTimer = try? self.loop.scheduleTimer(after: .milliseconds(100), repeating: .milliseconds(100)) {
            [weak self] in self?.replay()
        }
        self.replay()
    }

    /// Whether replay has nothing to do: `offline`, nothing unacknowledged; `always`, nothing waiting for replay
    /// (live records in flight are the broker's, until a disconnect rewinds them).
    func replayIdle(_ spool: Spool) -> Bool {
        self.writeAhead ? spool.pendingReplayCount == 0 : spool.unacknowledged == 0
    }

    func brokerDisconnected() {
        self.brokerUp = false
        self.control.dropTransient()
        if let timer = self.replayTimer { self.loop.cancel(timer) }
        self.replayTimer = nil
        // Staged messages are in flight in the spool: the rewind below makes them pending for replay. PUBACKs of
        // this connection will not come (a late one only means a duplicate).
        self.staging.removeAll()
        self.liveRecords.removeAll(keepingCapacity: true)
        self.controlInflight.removeAll(keepingCapacity: true)
        // In-flight replays may never be acknowledged now: they become pending again (duplicates are detectable
        // by sid/seq).
        self.spool?.rewindReplay()
    }

    /// Hands spooled records to the broker within the in-flight window and the replay rate.
    func replay() {
        guard let spool = self.spool, self.replayTimer != nil, self.mqtt.state == .connected else { return }
        if self.replayIdle(spool) {
            // Nothing left to replay: stop ticking until something is spooled again.
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
