/// The pure half of the consumer core: topic and payload reading, de-duplication, reordering and gap detection,
/// shared by `record`, `e4-server` and `watch` (SPEC §17). Feed it messages in arrival order and call
/// ``flush(now:)`` periodically; it returns ``ConsumerEvent``s.
public struct ConsumerCore: Sendable {
    public let prefix: String
    public private(set) var counters = ConsumerCounters()
    var orders: [Key: Track] = [:]
    /// A (device, stream, `sid`) sequence unheard of this long is forgotten.
    public var forgetAfter: Double = 900
    let window: Double
    let capacity: Int

    struct Key: Hashable, Sendable {
        var device: String
        var stream: ConsumerStream
        var sid: String
    }

    struct Track: Sendable {
        var order: StreamOrder
        var board: String
        var lastHeard: Double
    }

    public init(prefix: String, window: Double = 2.0, capacity: Int = 256) {
        self.prefix = prefix
        self.window = window
        self.capacity = capacity
    }

    /// The MQTT subscription that serves every board: `P/+/+/#` (it matches `P/A/status` too).
    public var subscription: String { "\(self.prefix)/+/+/#" }

    /// Reads one message.
    ///
    /// - Parameters:
    ///   - topic: the MQTT topic.
    ///   - payload: its bytes (an empty retained payload clears a topic and is ignored).
    ///   - now: seconds on any steady clock, for the reorder window.
    public mutating func receive(topic: String, payload: UnsafeRawBufferPointer, now: Double) -> [ConsumerEvent] {
        self.counters.received += 1
        guard let parsed = ConsumerTopic.parse(topic, prefix: self.prefix) else {
            self.counters.ignored += 1
            return []
        }
        if payload.isEmpty {
            self.counters.ignored += 1
            return []
        }
        do throws(PayloadError) {
            let json = try PayloadJSON.parse(payload)
            switch parsed {
            case .agentStatus(let board):
                guard let state = json["state"]?.string else { throw PayloadError("status without state") }
                return [.agentStatus(board: board, online: state == "online")]
            case .devices(let board):
                return [.devices(board: board, try SeenDevice.decodeAll(json))]
            case .metrics(let board):
                return [.metrics(board: board, try BoardMetrics.decode(json))]
            case .deviceStatus(let board, let device):
                return [.deviceStatus(board: board, device: device, try DeviceState.decode(json))]
            case .stream(let board, let device, let stream):
                let message = try DataMessage.decode(json, stream: stream)
                return self.order(message, board: board, device: device, now: now)
            }
        } catch {
            self.counters.malformed += 1
            return []
        }
    }

    /// Convenience for tests and tools holding bytes.
    public mutating func receive(topic: String, payload: [UInt8], now: Double) -> [ConsumerEvent] {
        payload.withUnsafeBytes { self.receive(topic: topic, payload: $0, now: now) }
    }

    mutating func order(_ message: DataMessage, board: String, device: String, now: Double) -> [ConsumerEvent] {
        let key = Key(device: device, stream: message.stream, sid: message.sid)
        var track = self.orders[key] ?? Track(order: StreamOrder(window: self.window, capacity: self.capacity),
                                              board: board, lastHeard: now)
        track.board = board
        track.lastHeard = now
        let outputs = track.order.accept(message, now: now)
        self.orders[key] = track
        return self.events(outputs, key: key, board: board)
    }

    /// Declares the gaps whose reorder window has passed and forgets long-silent sequences.
    public mutating func flush(now: Double) -> [ConsumerEvent] {
        var events: [ConsumerEvent] = []
        for key in Array(self.orders.keys) {
            guard var track = self.orders[key] else { continue }
            if track.order.waitingCount == 0 && now - track.lastHeard > self.forgetAfter {
                self.orders.removeValue(forKey: key)
                continue
            }
            let outputs = track.order.flush(now: now)
            if outputs.isEmpty { continue }
            self.orders[key] = track
            events += self.events(outputs, key: key, board: track.board)
        }
        return events
    }

    mutating func events(_ outputs: [StreamOrder.Output], key: Key, board: String) -> [ConsumerEvent] {
        var events: [ConsumerEvent] = []
        for output in outputs {
            switch output {
            case .deliver(let message):
                events.append(.data(board: board, device: key.device, message))
            case .gap(let seq, let count):
                self.counters.gaps += 1
                self.counters.missing += count
                events.append(.gap(board: board, device: key.device, stream: key.stream, sid: key.sid, seq: seq,
                                   count: count))
            case .duplicate:
                self.counters.duplicates += 1
            }
        }
        return events
    }
}
