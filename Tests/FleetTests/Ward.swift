@testable import Fleet

/// A deterministic ward for the property tests: N boards running ``FleetCoordinator`` against a fake retained-message
/// broker, and fake wristbands, in simulated time driven by one seed.
///
/// - The broker keeps retained messages (an empty payload deletes; message expiry drops a retained message for later
///   subscribers), delivers every message to every connected subscriber after its own random delay — so two
///   subscribers see two messages in different orders, and one subscriber may see one board's messages reordered —
///   publishes a board's Last Will when it is killed, and can restart losing everything.
/// - A wristband advertises every 0.5 s; each board in range hears an advertisement (80 % of them) at its base RSSI
///   ± 4 dB. In `.e4` mode it takes one central at a time and does not advertise while connected (an attempt while
///   it is taken fails: a *collision*); in `.strap` mode it advertises while connected and takes any number of
///   centrals, so two boards connected at once is possible and counted (a *double connection*).
/// - Every board has its own clock (a random offset): no coordinator sees the simulation's time.
struct Ward {
    enum Mode { case e4, strap }

    struct Options {
        var boards = 4
        var wristbands = 8
        var mode = Mode.e4
        var duration = 240.0
        /// Broker delivery delay per subscriber and message.
        var delay: ClosedRange<Double> = 0.005...0.3
        var connectLatency: ClosedRange<Double> = 0.3...1.5
        var disconnectLatency: ClosedRange<Double> = 0.05...0.5
        /// Mean seconds between spontaneous link losses of one connection; 0 for none.
        var linkLossMean = 120.0
        /// Every this many seconds a random wristband moves (its RSSI to every board is drawn again); 0 for never.
        var moveEvery = 0.0
        /// Every this many seconds a hostile publisher sends garbage on a fleet topic; 0 for never.
        var garbageEvery = 0.0
        var policy = FleetPolicy()
    }

    enum Kind {
        case tick(board: Int)
        case deliver(board: Int, generation: Int, topic: String, payload: [UInt8])
        case advertise(band: Int)
        case connectDone(board: Int, band: Int, attempt: Int)
        case disconnectDone(board: Int, band: Int)
        case linkLoss(band: Int, board: Int, connection: Int)
        case reconnectBroker(board: Int)
        case move
        case garbage
    }

    struct Scheduled {
        var time: Double
        var order: Int
        var kind: Kind
    }

    struct Board {
        var coordinator: FleetCoordinator
        var clockOffset: Double
        var alive = true
        var brokerConnected = false
        var will: (topic: String, payload: [UInt8])?
    }

    struct Band {
        var serial: String
        /// Base RSSI at each board, nil where out of range.
        var rssi: [Double?]
        var centrals: Set<Int> = []
        /// Each board's attempt under way, by number.
        var attempts: [Int: Int] = [:]
        /// The adapter each board's attempt or connection uses.
        var adapters: [Int: String] = [:]
        /// Counts connections, so a scheduled link loss of an earlier one is ignored.
        var connections: [Int: Int] = [:]
        var connectedTime = 0.0
        var coverableTime = 0.0
    }

    var options: Options
    var random: SplitMix64
    var now = 0.0
    var queue: [Scheduled] = []
    var order = 0
    var boards: [Board] = []
    var bands: [Band] = []
    var retained: [String: (payload: [UInt8], expires: Double?)] = [:]
    var brokerUp = true
    var generation = 0
    /// Counted from the start of measurement.
    var measureFrom = 30.0

    // Outcomes.
    var collisions = 0
    var doubleConnections = 0
    /// A connect on an adapter that already had an attempt in flight, or beyond the adapter's capacity.
    var adapterOverlaps = 0
    var overCapacity = 0
    var counters: [FleetCoordinator.Counter: Int] = [:]
    /// (time, band, board) of each connection that came up.
    var connectionsUp: [(time: Double, band: Int, board: Int)] = []
    var log: [String] = []

    init(seed: UInt64, options: Options = Options()) {
        self.options = options
        self.random = SplitMix64(seed: seed)
        let serials = (0..<options.wristbands).map { String(0xA00000 + $0, radix: 16) }
        for index in 0..<options.boards {
            let adapters: [FleetCoordinator.AdapterCapacity] = index % 2 == 0
                ? [.init(name: "hci0", capacity: 3)]
                : [.init(name: "hci0", capacity: 2), .init(name: "hci1", capacity: 2)]
            let coordinator = FleetCoordinator(board: "board-\(index)", prefix: "ward", wristbands: serials,
                                               adapters: adapters, incarnation: UInt64(index) * 1000,
                                               policy: options.policy)
            self.boards.append(Board(coordinator: coordinator, clockOffset: self.random.uniform(0...10_000)))
        }
        for serial in serials {
            self.bands.append(Band(serial: serial, rssi: []))
        }
        for band in self.bands.indices { self.place(band) }
        for board in self.boards.indices {
            self.schedule(self.random.uniform(0...0.25), .tick(board: board))
            self.schedule(self.random.uniform(0...2), .reconnectBroker(board: board))
        }
        for band in self.bands.indices { self.schedule(self.random.uniform(0...0.5), .advertise(band: band)) }
        if options.moveEvery > 0 { self.schedule(options.moveEvery, .move) }
        if options.garbageEvery > 0 { self.schedule(options.garbageEvery, .garbage) }
    }

    /// Draws a wristband's RSSI at each board: in range of two to three boards, one of them clearly nearest.
    mutating func place(_ band: Int) {
        let count = self.boards.count
        let nearest = self.random.below(count)
        var rssi = [Double?](repeating: nil, count: count)
        rssi[nearest] = self.random.uniform(-70 ... -50)
        rssi[(nearest + 1) % count] = self.random.uniform(-88 ... -65)
        if self.random.below(2) == 0 { rssi[(nearest + count - 1) % count] = self.random.uniform(-90 ... -70) }
        self.bands[band].rssi = rssi
    }

    // MARK: - The queue

    mutating func schedule(_ delay: Double, _ kind: Kind) {
        self.order += 1
        let item = Scheduled(time: self.now + delay, order: self.order, kind: kind)
        self.queue.append(item)
        var child = self.queue.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.before(self.queue[child], self.queue[parent]) else { break }
            self.queue.swapAt(child, parent)
            child = parent
        }
    }

    static func before(_ a: Scheduled, _ b: Scheduled) -> Bool {
        a.time < b.time || (a.time == b.time && a.order < b.order)
    }

    mutating func popFirst() -> Scheduled? {
        guard let first = self.queue.first else { return nil }
        let last = self.queue.removeLast()
        if !self.queue.isEmpty {
            self.queue[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var best = parent
                if left < self.queue.count && Self.before(self.queue[left], self.queue[best]) { best = left }
                if right < self.queue.count && Self.before(self.queue[right], self.queue[best]) { best = right }
                if best == parent { break }
                self.queue.swapAt(parent, best)
                parent = best
            }
        }
        return first
    }

    /// Runs the ward until `until` (simulation seconds), running `at` once when the clock passes each of its times.
    mutating func run(until: Double) {
        while let next = self.queue.first, next.time <= until {
            guard let item = self.popFirst() else { break }
            self.account(to: item.time)
            self.now = item.time
            self.handle(item.kind)
        }
        self.account(to: until)
        self.now = until
    }

    /// Accumulates connected and coverable time of every wristband up to `time`.
    mutating func account(to time: Double) {
        let from = max(self.now, self.measureFrom)
        guard time > from else { return }
        let span = time - from
        for index in self.bands.indices {
            let band = self.bands[index]
            let coverable = band.rssi.indices.contains { band.rssi[$0] != nil && self.boards[$0].alive }
            guard coverable else { continue }
            self.bands[index].coverableTime += span
            if !band.centrals.isEmpty { self.bands[index].connectedTime += span }
        }
    }

    // MARK: - Events

    mutating func feed(_ board: Int, _ event: FleetCoordinator.Event) {
        guard self.boards[board].alive else { return }
        let local = self.now + self.boards[board].clockOffset
        let actions = self.boards[board].coordinator.handle(event, now: local)
        for action in actions { self.execute(action, by: board) }
    }

    mutating func handle(_ kind: Kind) {
        switch kind {
        case .tick(let board):
            guard self.boards[board].alive else { return }
            self.feed(board, .tick)
            self.schedule(0.25, .tick(board: board))
        case .deliver(let board, let generation, let topic, let payload):
            guard generation == self.generation, self.boards[board].brokerConnected else { return }
            self.feed(board, .message(topic: topic, payload: payload))
        case .advertise(let index):
            self.schedule(0.5, .advertise(band: index))
            let band = self.bands[index]
            if self.options.mode == .e4 && !band.centrals.isEmpty { return }
            for board in band.rssi.indices {
                guard let base = band.rssi[board], self.boards[board].alive, self.random.below(5) != 0 else {
                    continue
                }
                let rssi = base + self.random.uniform(-4...4)
                // Every adapter of a board hears an advertisement (as BlueZ reports it, one object per adapter).
                for adapter in self.boards[board].coordinator.adapters {
                    self.feed(board, .localSighting(serial: band.serial, rssi: rssi, adapter: adapter.name))
                }
            }
        case .connectDone(let board, let index, let attempt):
            guard self.bands[index].attempts[board] == attempt else { return }
            self.bands[index].attempts[board] = nil
            guard self.boards[board].alive else { return }
            let band = self.bands[index]
            let adapter = self.adapterOf(board, index)
            let others = band.centrals.subtracting([board])
            if band.rssi[board] == nil {
                self.feed(board, .connectFailed(serial: band.serial, adapter: adapter))
            } else if self.options.mode == .e4 && !others.isEmpty {
                self.collisions += 1
                self.log.append("\(self.now): collision: board-\(board) connecting \(band.serial) held by \(others)")
                self.feed(board, .connectFailed(serial: band.serial, adapter: adapter))
            } else {
                if !others.isEmpty {
                    self.doubleConnections += 1
                    self.log.append("\(self.now): double: board-\(board) and \(others) on \(band.serial)")
                }
                self.bands[index].centrals.insert(board)
                let connection = (self.bands[index].connections[board] ?? 0) + 1
                self.bands[index].connections[board] = connection
                self.connectionsUp.append((self.now, index, board))
                if self.options.linkLossMean > 0 {
                    // Uniform with the given mean: losses at random, never all at once.
                    let wait = self.random.uniform(0...(2 * self.options.linkLossMean))
                    self.schedule(wait, .linkLoss(band: index, board: board, connection: connection))
                }
                self.feed(board, .connected(serial: band.serial, adapter: adapter))
            }
        case .disconnectDone(let board, let index):
            let serial = self.bands[index].serial
            let adapter = self.adapterOf(board, index)
            if self.bands[index].centrals.remove(board) != nil {
                self.feed(board, .disconnected(serial: serial, adapter: adapter))
            } else if self.bands[index].attempts.removeValue(forKey: board) != nil {
                self.feed(board, .connectFailed(serial: serial, adapter: adapter))
            }
        case .linkLoss(let index, let board, let connection):
            guard self.bands[index].connections[board] == connection,
                  self.bands[index].centrals.remove(board) != nil else { return }
            self.feed(board, .disconnected(serial: self.bands[index].serial, adapter: self.adapterOf(board, index)))
        case .reconnectBroker(let board):
            guard self.brokerUp, self.boards[board].alive else { return }
            self.boards[board].will = self.boards[board].coordinator.will
            self.boards[board].brokerConnected = true
            // Subscribing hands over every retained message that has not expired.
            for (topic, message) in self.retained.sorted(by: { $0.key < $1.key }) {
                if let expires = message.expires, expires <= self.now { continue }
                self.schedule(self.random.uniform(self.options.delay),
                              .deliver(board: board, generation: self.generation, topic: topic,
                                       payload: message.payload))
            }
            self.feed(board, .brokerConnected)
        case .move:
            let index = self.random.below(self.bands.count)
            self.place(index)
            self.schedule(self.options.moveEvery, .move)
        case .garbage:
            self.schedule(self.options.garbageEvery, .garbage)
            let serial = self.bands[self.random.below(self.bands.count)].serial
            let board = "board-\(self.random.below(self.boards.count))"
            let topics = ["ward/fleet/lease/\(serial)", "ward/fleet/seen/\(serial)/\(board)",
                          "ward/fleet/board/\(board)",
                          "ward/fleet/lease/\(serial)/x", "ward/fleet/lease/+", "ward/fleet/seen/\(serial)"]
            let topic = topics[self.random.below(topics.count)]
            var payload: [UInt8]
            if self.random.below(2) == 0 {
                payload = (0...self.random.below(100)).map { _ in UInt8(truncatingIfNeeded: self.random.next()) }
            } else {
                // A valid lease cut short: JSON that ends too soon, never a lease.
                let lease = Lease(holder: board, epoch: UInt64(1 + self.random.below(1000)), state: .held, ttl: 6,
                                  scoreTenths: -500).encoded()
                payload = Array(lease.prefix(1 + self.random.below(lease.count - 1)))
            }
            // Not retained: a retained garbage lease would only hide the real one from later subscribers.
            self.broadcast(topic, payload, retain: false, expiry: nil)
        }
    }

    /// The adapter a board's attempt or connection to a wristband uses.
    func adapterOf(_ board: Int, _ band: Int) -> String {
        self.bands[band].adapters[board] ?? "hci0"
    }

    mutating func execute(_ action: FleetCoordinator.Action, by board: Int) {
        switch action {
        case .publish(let topic, let payload, let retain, let expiry):
            self.publish(topic, payload, retain: retain, expiry: expiry, by: board)
        case .clearRetained(let topic):
            self.publish(topic, [], retain: true, expiry: nil, by: board)
        case .connect(let serial, let adapter):
            guard let index = self.bands.firstIndex(where: { $0.serial == serial }) else { return }
            let onAdapter = self.bands.indices.filter { other in
                self.bands[other].adapters[board] == adapter
                    && (self.bands[other].attempts[board] != nil || self.bands[other].centrals.contains(board))
            }
            if onAdapter.contains(where: { self.bands[$0].attempts[board] != nil }) {
                self.adapterOverlaps += 1
                self.log.append("\(self.now): board-\(board): a second attempt in flight on \(adapter)")
            }
            let capacity = self.boards[board].coordinator.adapters.first { $0.name == adapter }?.capacity ?? 0
            if onAdapter.count + 1 > capacity {
                self.overCapacity += 1
                self.log.append("\(self.now): board-\(board): \(adapter) over its capacity \(capacity)")
            }
            self.order += 1
            self.bands[index].attempts[board] = self.order
            self.bands[index].adapters[board] = adapter
            self.schedule(self.random.uniform(self.options.connectLatency),
                          .connectDone(board: board, band: index, attempt: self.order))
        case .disconnect(let serial, _):
            guard let index = self.bands.firstIndex(where: { $0.serial == serial }) else { return }
            self.schedule(self.random.uniform(self.options.disconnectLatency),
                          .disconnectDone(board: board, band: index))
        case .log(let line):
            self.log.append("\(self.now): board-\(board): \(line)")
        case .count(let counter):
            self.counters[counter, default: 0] += 1
        }
    }

    mutating func publish(_ topic: String, _ payload: [UInt8], retain: Bool, expiry: UInt32?, by board: Int) {
        guard self.brokerUp, self.boards[board].brokerConnected else { return }
        self.broadcast(topic, payload, retain: retain, expiry: expiry)
    }

    mutating func broadcast(_ topic: String, _ payload: [UInt8], retain: Bool, expiry: UInt32?) {
        if retain {
            if payload.isEmpty {
                self.retained[topic] = nil
            } else {
                self.retained[topic] = (payload, expiry.map { self.now + Double($0) })
            }
        }
        for subscriber in self.boards.indices where self.boards[subscriber].brokerConnected {
            self.schedule(self.random.uniform(self.options.delay),
                          .deliver(board: subscriber, generation: self.generation, topic: topic, payload: payload))
        }
    }

    // MARK: - Faults

    /// Kills a board: its process stops, its links drop after a BLE supervision timeout, and (with `will`) the
    /// broker publishes its Last Will after `willAfter` seconds.
    mutating func kill(_ board: Int, will: Bool, willAfter: Double = 0.5) {
        self.boards[board].alive = false
        for index in self.bands.indices {
            self.bands[index].attempts[board] = nil
            if self.bands[index].centrals.contains(board) {
                self.schedule(self.random.uniform(0.5...2), .disconnectDone(board: board, band: index))
            }
        }
        let lastWill = self.boards[board].will
        self.run(until: self.now + willAfter)
        self.boards[board].brokerConnected = false
        if will, let lastWill {
            self.broadcast(lastWill.topic, lastWill.payload, retain: true, expiry: nil)
        }
    }

    /// Restarts the broker without persistence: every retained message and message in flight is lost, every board
    /// is disconnected and comes back after its own reconnect delay.
    mutating func restartBroker(down: Double) {
        self.generation += 1
        self.retained = [:]
        self.brokerUp = false
        for board in self.boards.indices where self.boards[board].alive {
            self.boards[board].brokerConnected = false
            self.feed(board, .brokerDisconnected)
        }
        self.run(until: self.now + down)
        self.brokerUp = true
        for board in self.boards.indices where self.boards[board].alive {
            self.schedule(self.random.uniform(0.2...5), .reconnectBroker(board: board))
        }
    }

    func capacity(_ board: Int) -> Int { self.boards[board].coordinator.adapters.reduce(0) { $0 + $1.capacity } }

    func connectedCount(_ board: Int) -> Int { self.bands.filter { $0.centrals.contains(board) }.count }

    /// The board each wristband is connected to now (nil when none).
    var holders: [Int?] { self.bands.map { $0.centrals.first } }

    var availability: (overall: Double, worst: Double) {
        let connected = self.bands.reduce(0) { $0 + $1.connectedTime }
        let coverable = self.bands.reduce(0) { $0 + $1.coverableTime }
        let worst = self.bands.map { $0.coverableTime > 0 ? $0.connectedTime / $0.coverableTime : 1 }.min() ?? 1
        return (coverable > 0 ? connected / coverable : 1, worst)
    }
}
