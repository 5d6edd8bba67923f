/// One board's part in fleet coordination (SPEC §18) as a pure state machine: events in, actions out.
///
/// The agent feeds it what happened — its clock's ticks, advertisements it heard, every message on
/// `P/fleet/#`, its connections' outcomes, the broker connection — and executes what it returns: publications,
/// connects and disconnects, log lines and counters. Nothing here touches a socket, a timer or a clock: `now` is
/// the board's own monotonic time in seconds, passed with every event, and a received message counts from the
/// moment it is handled, never from a time its sender wrote.
///
/// The rules, in short (Docs/fleet.md has them with the reasons):
/// - A board connects a wristband only while it holds the wristband's lease. It claims a free lease with the
///   highest epoch it knows plus one, after a delay of its RSSI rank × ``FleetPolicy/stagger``; it waits
///   ``FleetPolicy/settle`` and connects only if its claim still wins. Leases are ordered by ``Lease/beats(_:)``
///   (epoch, then score, then the lower board id), so every board picks the same winner whatever order the claims
///   arrived in.
/// - A holder renews every ``FleetPolicy/renewInterval``. A holder or claimer whose lease is beaten lets go at once
///   (fencing): it disconnects and publishes nothing more for that epoch.
/// - A lease is free when released, expired, or held by a board whose presence says offline.
/// - Handover is break-before-make and sticky: a challenger claims over a live holder only on sustained RSSI
///   evidence after a minimum hold; a holder that has no slot for its wristband, or lost it, releases it.
/// - After each broker connection holders re-assert at once and nobody claims for ``FleetPolicy/grace``.
public struct FleetCoordinator: Sendable {
    public enum Event: Sendable, Equatable {
        /// The board's periodic tick (every 250 ms is plenty): timers are evaluated here.
        case tick
        /// An advertisement of wristband `serial` heard by `adapter` at `rssi` dBm. (The adapter is not used to
        /// choose where to connect: connections go to the adapter with the most free slots.)
        case localSighting(serial: String, rssi: Double, adapter: String)
        /// A message received on a fleet topic; an empty payload is a retained message's deletion.
        case message(topic: String, payload: [UInt8])
        case connected(serial: String, adapter: String)
        /// A connection that was up went down.
        case disconnected(serial: String, adapter: String)
        /// A connection attempt ended without a connection.
        case connectFailed(serial: String, adapter: String)
        /// The broker session is up and `P/fleet/#` is subscribed (the will from ``will`` was registered).
        case brokerConnected
        case brokerDisconnected
        /// The board's adapters and their capacities changed (reload, an adapter removed or added).
        case adaptersChanged([AdapterCapacity])
        /// The agent is stopping: release every lease, disconnect, publish offline.
        case shutdown
    }

    public enum DisconnectReason: String, Sendable, Equatable {
        /// Another board's lease beats ours (a higher epoch, or our claim lost the tie-break).
        case fenced
        /// We released the lease (no slot, lost, shutdown).
        case released
        /// A connection came up for a wristband we do not hold (it was fenced while connecting).
        case notLeased
    }

    public enum Counter: String, Sendable, Equatable, CaseIterable {
        case messageDropped
        case claimed
        case handoverClaimed
        case acquired
        case withdrawn
        case fenced
        case released
    }

    public enum Action: Sendable, Equatable {
        case publish(topic: String, payload: [UInt8], retain: Bool, expirySeconds: UInt32?)
        /// Delete a retained message (publish an empty retained payload).
        case clearRetained(topic: String)
        case connect(serial: String, adapter: String)
        case disconnect(serial: String, reason: DisconnectReason)
        case log(String)
        case count(Counter)
    }

    /// An adapter of this board and how many connections it takes.
    public struct AdapterCapacity: Sendable, Equatable {
        public var name: String
        public var capacity: Int
        public init(name: String, capacity: Int) {
            self.name = name
            self.capacity = max(0, capacity)
        }
    }

    /// Our part in one wristband's lease.
    public enum Role: Sendable, Equatable {
        case none
        /// Our claim of `epoch` was published at `since`; we connect after the settle window if it still wins.
        case claiming(epoch: UInt64, since: Double)
        /// We hold `epoch` since `since`; last renewed at `renewed`.
        case holding(epoch: UInt64, since: Double, renewed: Double)
    }

    public enum Link: Sendable, Equatable {
        /// No connection; the next attempt may start at `retryAt`.
        case idle(retryAt: Double)
        case connecting(adapter: String)
        case connected(adapter: String)
        /// We asked for a disconnect and wait for it to complete (the slot is still taken).
        case disconnecting(adapter: String)

        var adapter: String? {
            switch self {
            case .idle: nil
            case .connecting(let adapter), .connected(let adapter), .disconnecting(let adapter): adapter
            }
        }
    }

    struct RemoteSighting: Sendable, Equatable {
        var rssiTenths: Int
        var free: Int
        var receivedAt: Double
    }

    struct RemoteBoard: Sendable, Equatable {
        var presence: BoardPresence
    }

    /// Everything this board knows and does about one whitelisted wristband.
    struct Band: Sendable, Equatable {
        /// The locally smoothed RSSI (dBm) and when it was last heard.
        var smoothed: Double?
        var lastHeard = -Double.infinity
        var publishedSighting = false
        var seen: [String: RemoteSighting] = [:]
        /// The winning lease of the highest epoch known, when it first won here, and until when it lives.
        var top: Lease?
        var topSince = -Double.infinity
        var topExpires = -Double.infinity
        var role = Role.none
        var link = Link.idle(retryAt: -Double.infinity)
        var failures = 0
        /// When we last were connected to it or heard it (for ``FleetPolicy/lostRelease``).
        var lastContact = -Double.infinity
        /// Our link to it was lost and has not come back: the attempts since are retries of a lost link.
        var linkLost = false
        /// When each of our adapters last heard it (only adapters we have), and the adapter of its last link: BlueZ
        /// has a device object for it there, so an attempt can go there.
        var heardOn: [String: Double] = [:]
        var lastAdapter: String?
        /// Since when the lease has looked free to us (for the stagger).
        var freeSince: Double?
        /// Since when our RSSI has beaten the holder's by the margin (for the handover).
        var evidenceSince: Double?
    }

    public let board: String
    public let prefix: String
    public let policy: FleetPolicy
    public private(set) var adapters: [AdapterCapacity]
    private(set) var bands: [String: Band] = [:]
    private(set) var boards: [String: RemoteBoard] = [:]
    public private(set) var brokerUp = false
    /// The current broker session's number (see ``BoardPresence/session``).
    public private(set) var session: UInt64
    private(set) var graceUntil = -Double.infinity
    private(set) var lastSightingRound = -Double.infinity
    private var publishedPresence: BoardPresence?

    /// - Parameters:
    ///   - board: this board's id (`agent.id`), an identifier.
    ///   - prefix: `mqtt.topic_prefix`.
    ///   - wristbands: the whitelisted wristbands' ids (serials); others are ignored, and so is an id that is not
    ///     an identifier (``FleetProtocol/isIdentifier(_:)``: it could not be a topic segment).
    ///   - adapters: the adapters and their capacities.
    ///   - incarnation: a number above every session of this board's earlier runs (the agent passes its start time
    ///     in wall-clock milliseconds); sessions count up from it.
    public init(board: String, prefix: String, wristbands: [String], adapters: [AdapterCapacity],
                incarnation: UInt64 = 0, policy: FleetPolicy = FleetPolicy()) {
        self.board = board
        self.prefix = prefix
        self.policy = policy
        self.adapters = adapters
        self.session = incarnation
        for serial in wristbands where FleetProtocol.isIdentifier(serial) { self.bands[serial] = Band() }
    }

    /// The Last Will to register for the next broker connection: this board offline, in that connection's session.
    public var will: (topic: String, payload: [UInt8]) {
        (FleetTopic.board(self.board).text(prefix: self.prefix),
         BoardPresence(online: false, session: self.session &+ 1, adapters: self.presenceAdapters()).encoded())
    }

    /// Our role for a wristband, for status and tests.
    public func role(of serial: String) -> Role? { self.bands[serial]?.role }
    public func link(of serial: String) -> Link? { self.bands[serial]?.link }
    /// The lease of `serial` as this board sees it.
    public func lease(of serial: String) -> Lease? { self.bands[serial]?.top }

    /// Handles one event at `now` and returns the actions to execute, in order.
    public mutating func handle(_ event: Event, now: Double) -> [Action] {
        var out: [Action] = []
        switch event {
        case .tick:
            self.tick(now, &out)
        case .localSighting(let serial, let rssi, let adapter):
            self.heard(serial, rssi: rssi, adapter: adapter, now: now)
        case .message(let topic, let payload):
            do throws(FleetDecodeError) {
                let message = try FleetMessage.decode(topic: topic, payload: payload, prefix: self.prefix)
                self.received(message, now, &out)
            } catch {
                out.append(.count(.messageDropped))
                out.append(.log("fleet: dropped a message on \(topic.prefix(96)): \(error)"))
            }
        case .connected(let serial, let adapter):
            self.connected(serial, adapter: adapter, now, &out)
        case .disconnected(let serial, _):
            self.linkEnded(serial, failed: false, now, &out)
        case .connectFailed(let serial, _):
            self.linkEnded(serial, failed: true, now, &out)
        case .brokerConnected:
            self.brokerConnected(now, &out)
        case .brokerDisconnected:
            self.brokerDisconnected(now)
        case .adaptersChanged(let adapters):
            self.adapters = adapters
            for (serial, band) in self.bands {
                if let adapter = band.link.adapter, !adapters.contains(where: { $0.name == adapter }) {
                    self.bands[serial]?.link = .idle(retryAt: now)
                }
                self.bands[serial]?.heardOn = band.heardOn.filter { name, _ in adapters.contains { $0.name == name } }
            }
            self.tick(now, &out)
        case .shutdown:
            self.shutdown(now, &out)
            return out
        }
        self.publishPresenceIfChanged(&out)
        return out
    }

    // MARK: - Local radio

    private mutating func heard(_ serial: String, rssi: Double, adapter: String, now: Double) {
        // Only our adapters hear for us (an unknown name is the caller's mistake; it claims nothing).
        guard var band = self.bands[serial], rssi.isFinite, self.adapters.contains(where: { $0.name == adapter })
        else { return }
        band.heardOn[adapter] = now
        let clamped = min(max(rssi, Sighting.rssiRange.lowerBound), Sighting.rssiRange.upperBound)
        if let smoothed = band.smoothed, now - band.lastHeard < self.policy.localExpiry {
            band.smoothed = smoothed + self.policy.rssiSmoothing * (clamped - smoothed)
        } else {
            band.smoothed = clamped
        }
        band.lastHeard = now
        band.lastContact = max(band.lastContact, now)
        self.bands[serial] = band
    }

    /// Our smoothed RSSI for a wristband heard recently, in tenths as published.
    private func localTenths(_ band: Band, _ now: Double) -> Int? {
        guard let smoothed = band.smoothed, now - band.lastHeard < self.policy.localExpiry else { return nil }
        return FleetJSONWriter.tenths(of: smoothed)
    }

    // MARK: - Slots

    /// Slots on `adapter` neither connected, being connected nor being disconnected.
    private func freeSlots(on adapter: AdapterCapacity) -> Int {
        let used = self.bands.values.reduce(0) { $0 + ($1.link.adapter == adapter.name ? 1 : 0) }
        return max(0, adapter.capacity - used)
    }

    /// Slots for wristbands we do not yet hold or claim: the capacity less every commitment.
    private var uncommittedSlots: Int {
        let capacity = self.adapters.reduce(0) { $0 + $1.capacity }
        let committed = self.bands.values.reduce(0) { count, band in
            if band.role != .none || band.link.adapter != nil { return count + 1 }
            return count
        }
        return max(0, capacity - committed)
    }

    private func presenceAdapters() -> [AdapterSlots] {
        self.adapters.filter { FleetProtocol.isIdentifier($0.name) }.prefix(BoardPresence.maximumAdapters).map {
            AdapterSlots(name: $0.name, capacity: min($0.capacity, BoardPresence.maximumCapacity),
                         free: min(self.freeSlots(on: $0), min($0.capacity, BoardPresence.maximumCapacity)))
        }
    }

    /// The adapter for the next attempt: no attempt in flight there, the most free slots, then the lower name.
    /// The adapter for `band`'s next attempt: one without an attempt in flight and with a free slot; among those, one
    /// that heard it lately (or carried its last link) first, then the most free slots, then the lower name.
    private func chooseAdapter(for band: Band, _ now: Double) -> String? {
        var best: (name: String, reaches: Bool, free: Int)?
        for adapter in self.adapters {
            let busy = self.bands.values.contains { $0.link == .connecting(adapter: adapter.name) }
            let free = self.freeSlots(on: adapter)
            guard !busy, free > 0 else { continue }
            let heard = band.heardOn[adapter.name].map { now - $0 < self.policy.localExpiry } ?? false
            let reaches = heard || band.lastAdapter == adapter.name
            if let current = best {
                if current.reaches != reaches {
                    if current.reaches { continue }
                } else if current.free > free || (current.free == free && current.name < adapter.name) {
                    continue
                }
            }
            best = (adapter.name, reaches, free)
        }
        return best?.name
    }

    // MARK: - Messages from the broker

    private mutating func received(_ message: FleetMessage, _ now: Double, _ out: inout [Action]) {
        switch message {
        case .board(let board, let presence):
            guard board != self.board else { return }
            self.presence(board, presence, now, &out)
        case .seen(let serial, let board, let sighting):
            guard board != self.board, var band = self.bands[serial] else { return }
            if let sighting {
                guard band.seen[board] != nil || band.seen.count < self.policy.maximumBoards else { return }
                band.seen[board] = RemoteSighting(rssiTenths: sighting.rssiTenths, free: sighting.free,
                                                  receivedAt: now)
            } else {
                band.seen[board] = nil
            }
            self.bands[serial] = band
        case .lease(let serial, let lease):
            // A deletion tells nothing (nobody in the protocol deletes a lease); an unknown wristband is not ours.
            guard let lease, self.bands[serial] != nil else { return }
            self.merge(lease, into: serial, now, &out)
            self.checkFencing(serial, now, &out)
        }
    }

    private mutating func presence(_ board: String, _ presence: BoardPresence?, _ now: Double,
                                   _ out: inout [Action]) {
        let known = self.boards[board]?.presence
        guard let presence else {
            // A deleted presence: the board is gone, in the session we know of.
            if var known, known.online {
                known.online = false
                self.boards[board] = RemoteBoard(presence: known)
            }
            return
        }
        if let known {
            // A later session wins; within one, offline is final.
            if presence.session < known.session { return }
            if presence.session == known.session && !known.online && presence.online { return }
        } else if self.boards.count >= self.policy.maximumBoards {
            return
        }
        self.boards[board] = RemoteBoard(presence: presence)
        if !presence.online && known?.online != false {
            out.append(.log("fleet: board \(board) is offline; its leases are free"))
        }
    }

    /// Folds a lease into the wristband's view: the lease that ``Lease/beats(_:)`` the others is kept; the same
    /// lease again (holder, epoch and score) only moves its state forward and extends its life. The view is then the
    /// same whatever order the leases came in: the winner is the maximum, and every message of it is merged from
    /// the first on (a message of another score is another contestant, so a forged or garbled score cannot borrow
    /// the winner's state).
    private mutating func merge(_ lease: Lease, into serial: String, _ now: Double, _ out: inout [Action]) {
        guard var band = self.bands[serial] else { return }
        if var top = band.top, top.holder == lease.holder, top.epoch == lease.epoch,
           top.scoreTenths == lease.scoreTenths
        {
            if lease.state.rank > top.state.rank { top.state = lease.state }
            top.ttl = lease.ttl
            band.top = top
            if lease.state != .released { band.topExpires = max(band.topExpires, now + Double(lease.ttl)) }
        } else if band.top.map({ lease.beats($0) }) ?? true {
            band.top = lease
            band.topSince = now
            band.topExpires = now + Double(lease.ttl)
        } else {
            return
        }
        // Our own lease from before (an earlier run, an abandoned claim): say it is free rather than let it expire.
        if lease.holder == self.board, band.role == .none, let top = band.top, top.holder == self.board,
           top.state != .released, self.brokerUp {
            var released = top
            released.state = .released
            band.top = released
            self.publishLease(released, serial, &out)
        }
        self.bands[serial] = band
    }

    /// Lets go at once of a wristband whose lease another board now wins.
    private mutating func checkFencing(_ serial: String, _ now: Double, _ out: inout [Action]) {
        guard var band = self.bands[serial], let top = band.top else { return }
        let epoch: UInt64
        switch band.role {
        case .none: return
        case .claiming(let claimed, _): epoch = claimed
        case .holding(let held, _, _): epoch = held
        }
        guard top.holder != self.board || top.epoch != epoch else { return }
        let wasHolding = if case .holding = band.role { true } else { false }
        band.role = .none
        out.append(.count(wasHolding ? .fenced : .withdrawn))
        out.append(.log("fleet: \(serial): \(top.holder)'s lease of epoch \(top.epoch) beats ours of \(epoch); "
            + (wasHolding ? "disconnecting" : "withdrawing")))
        self.letGo(&band, serial, reason: .fenced, now, &out)
        self.bands[serial] = band
    }

    /// Ends or abandons our connection to a wristband we no longer hold.
    private func letGo(_ band: inout Band, _ serial: String, reason: DisconnectReason, _ now: Double,
                       _ out: inout [Action]) {
        switch band.link {
        case .connecting(let adapter), .connected(let adapter):
            band.link = .disconnecting(adapter: adapter)
            out.append(.disconnect(serial: serial, reason: reason))
        case .idle, .disconnecting:
            break
        }
    }

    // MARK: - Connections

    private mutating func connected(_ serial: String, adapter: String, _ now: Double, _ out: inout [Action]) {
        guard var band = self.bands[serial] else { return }
        band.lastContact = now
        band.failures = 0
        band.linkLost = false
        band.lastAdapter = adapter
        if case .holding = band.role {
            band.link = .connected(adapter: adapter)
        } else {
            // Fenced while connecting: the connection must not stay up.
            band.link = .disconnecting(adapter: adapter)
            out.append(.disconnect(serial: serial, reason: .notLeased))
        }
        self.bands[serial] = band
        // A slot's attempt is over: the next held wristband may start its own.
        self.tick(now, &out)
    }

    private mutating func linkEnded(_ serial: String, failed: Bool, _ now: Double, _ out: inout [Action]) {
        guard var band = self.bands[serial] else { return }
        let wasUp = if case .connected = band.link { true } else { false }
        if wasUp {
            band.lastContact = now
            band.linkLost = true
        }
        if failed && !wasUp {
            band.failures += 1
            let delay = min(self.policy.retryMaximum,
                            self.policy.retryInitial * Double(1 << min(band.failures - 1, 16)))
            band.link = .idle(retryAt: now + delay)
        } else {
            // A lost link is retried at once while we hold the lease.
            band.link = .idle(retryAt: now)
        }
        self.bands[serial] = band
        self.tick(now, &out)
    }

    // MARK: - Broker

    private mutating func brokerConnected(_ now: Double, _ out: inout [Action]) {
        self.brokerUp = true
        self.session &+= 1
        self.graceUntil = now + self.policy.grace
        self.publishedPresence = nil
        self.lastSightingRound = -Double.infinity
        // Holders re-assert at once: the broker may have lost every retained message.
        for serial in self.bands.keys.sorted() {
            guard var band = self.bands[serial] else { continue }
            band.publishedSighting = false
            band.freeSince = nil
            band.evidenceSince = nil
            if case .holding(let epoch, let since, _) = band.role, var top = band.top {
                band.role = .holding(epoch: epoch, since: since, renewed: now)
                top.ttl = self.policy.leaseTTL
                band.topExpires = now + Double(top.ttl)
                self.publishLease(top, serial, &out)
            }
            self.bands[serial] = band
        }
        self.publishPresenceIfChanged(&out)
        self.tick(now, &out)
    }

    private mutating func brokerDisconnected(_ now: Double) {
        self.brokerUp = false
        for serial in self.bands.keys {
            // A claim that cannot be seen to settle is abandoned; held leases and their connections are kept (the
            // wristband, connected to us, advertises to nobody else).
            if case .claiming = self.bands[serial]?.role { self.bands[serial]?.role = .none }
        }
    }

    private mutating func shutdown(_ now: Double, _ out: inout [Action]) {
        for serial in self.bands.keys.sorted() {
            guard var band = self.bands[serial] else { continue }
            if band.role != .none, let top = band.top, top.holder == self.board, self.brokerUp {
                var released = top
                released.state = .released
                band.top = released
                self.publishLease(released, serial, &out)
            }
            band.role = .none
            self.letGo(&band, serial, reason: .released, now, &out)
            if band.publishedSighting && self.brokerUp {
                out.append(.clearRetained(topic: FleetTopic.seen(serial: serial, board: self.board)
                    .text(prefix: self.prefix)))
                band.publishedSighting = false
            }
            self.bands[serial] = band
        }
        if self.brokerUp {
            let offline = BoardPresence(online: false, session: self.session, adapters: self.presenceAdapters())
            out.append(.publish(topic: FleetTopic.board(self.board).text(prefix: self.prefix),
                                payload: offline.encoded(), retain: true, expirySeconds: nil))
        }
    }

    private mutating func publishPresenceIfChanged(_ out: inout [Action]) {
        guard self.brokerUp else { return }
        let presence = BoardPresence(online: true, session: self.session, adapters: self.presenceAdapters())
        guard presence != self.publishedPresence else { return }
        self.publishedPresence = presence
        out.append(.publish(topic: FleetTopic.board(self.board).text(prefix: self.prefix),
                            payload: presence.encoded(), retain: true, expirySeconds: nil))
    }

    private func publishLease(_ lease: Lease, _ serial: String, _ out: inout [Action]) {
        guard self.brokerUp else { return }
        out.append(.publish(topic: FleetTopic.lease(serial).text(prefix: self.prefix), payload: lease.encoded(),
                            retain: true, expirySeconds: nil))
    }

    // MARK: - Timers

    private mutating func tick(_ now: Double, _ out: inout [Action]) {
        for serial in self.bands.keys.sorted() {
            self.evaluate(serial, now, &out)
        }
        if self.brokerUp && now - self.lastSightingRound >= self.policy.sightingInterval {
            self.lastSightingRound = now
            self.publishSightings(now, &out)
        }
    }

    private mutating func publishSightings(_ now: Double, _ out: inout [Action]) {
        let free = self.uncommittedSlots
        for serial in self.bands.keys.sorted() {
            guard var band = self.bands[serial] else { continue }
            let topic = FleetTopic.seen(serial: serial, board: self.board).text(prefix: self.prefix)
            if let tenths = self.localTenths(band, now) {
                out.append(.publish(topic: topic, payload: Sighting(rssiTenths: tenths, free: free).encoded(),
                                    retain: true, expirySeconds: self.sightingExpirySeconds))
                band.publishedSighting = true
            } else if band.publishedSighting {
                out.append(.clearRetained(topic: topic))
                band.publishedSighting = false
            }
            self.bands[serial] = band
        }
    }

    /// The sightings' MQTT message expiry: the policy's, in whole seconds, 1 s to a day.
    private var sightingExpirySeconds: UInt32 {
        let seconds = self.policy.sightingExpiry.rounded(.up)
        return seconds.isFinite ? UInt32(min(max(seconds, 1), 86_400)) : 6
    }

    /// Whether the lease, not ours, lets us claim: released, expired, or its holder offline. A missing lease is
    /// free too; the grace period after a broker connection keeps that from meaning "lost by the broker".
    private func isFree(_ band: Band, _ now: Double) -> Bool {
        guard let top = band.top else { return true }
        if top.state == .released { return true }
        if now >= band.topExpires { return true }
        if let presence = self.boards[top.holder]?.presence, !presence.online { return true }
        return false
    }

    /// Our rank (0 = best) among the boards that hear the wristband and have a free slot, by RSSI then board id;
    /// `excluding` leaves out a holder.
    private func rank(_ band: Band, mine: Int, excluding: String?, _ now: Double) -> Int {
        var rank = 0
        for (board, sighting) in band.seen where board != excluding {
            guard now - sighting.receivedAt < self.policy.sightingExpiry, sighting.free > 0 else { continue }
            if let presence = self.boards[board]?.presence, !presence.online { continue }
            if sighting.rssiTenths > mine
                || (sighting.rssiTenths == mine && board.utf8.lexicographicallyPrecedes(self.board.utf8))
            {
                rank += 1
            }
        }
        return rank
    }

    private mutating func evaluate(_ serial: String, _ now: Double, _ out: inout [Action]) {
        guard var band = self.bands[serial] else { return }
        defer { self.bands[serial] = band }
        switch band.role {
        case .none:
            self.considerClaim(&band, serial, now, &out)
        case .claiming(let epoch, let since):
            guard now - since >= self.policy.settle, let top = band.top, top.holder == self.board,
                  top.epoch == epoch else { return }
            var held = top
            held.state = .held
            band.top = held
            band.topExpires = now + Double(held.ttl)
            band.role = .holding(epoch: epoch, since: now, renewed: now)
            band.lastContact = max(band.lastContact, now)
            band.linkLost = false
            out.append(.count(.acquired))
            self.publishLease(held, serial, &out)
            self.pumpConnect(&band, serial, now, &out)
        case .holding(let epoch, let since, let renewed):
            if self.brokerUp && now - renewed >= self.policy.renewInterval, let top = band.top {
                band.role = .holding(epoch: epoch, since: since, renewed: now)
                band.topExpires = now + Double(top.ttl)
                self.publishLease(top, serial, &out)
            }
            if Self.awaitsContact(band), now - band.lastContact >= self.policy.lostRelease {
                self.release(&band, serial, why: "neither connected nor heard for \(self.policy.lostRelease) s",
                             now, &out)
                return
            }
            self.pumpConnect(&band, serial, now, &out)
        }
    }

    private mutating func considerClaim(_ band: inout Band, _ serial: String, _ now: Double,
                                        _ out: inout [Action]) {
        guard self.brokerUp, now >= self.graceUntil, let mine = self.localTenths(band, now),
              self.uncommittedSlots > 0, band.link.adapter == nil
        else {
            band.freeSince = nil
            band.evidenceSince = nil
            return
        }
        if self.isFree(band, now) {
            band.evidenceSince = nil
            let since = band.freeSince ?? now
            band.freeSince = since
            let rank = self.rank(band, mine: mine, excluding: nil, now)
            guard now - since >= Double(rank) * self.policy.stagger else { return }
            self.claim(&band, serial, score: mine, handover: false, now, &out)
            return
        }
        band.freeSince = nil
        // Held by a live board: a handover needs sustained, large evidence and a minimum hold.
        guard let top = band.top, top.holder != self.board, now - band.topSince >= self.policy.minimumHold,
              self.rank(band, mine: mine, excluding: top.holder, now) == 0
        else {
            band.evidenceSince = nil
            return
        }
        let holder = band.seen[top.holder].flatMap { now - $0.receivedAt < self.policy.sightingExpiry ? $0 : nil }
        let holderTenths = holder?.rssiTenths ?? Int(Sighting.rssiRange.lowerBound * 10)
        guard mine >= holderTenths + self.policy.handoverMarginTenths else {
            band.evidenceSince = nil
            return
        }
        let since = band.evidenceSince ?? now
        band.evidenceSince = since
        guard now - since >= self.policy.handoverSustain else { return }
        self.claim(&band, serial, score: mine, handover: true, now, &out)
    }

    private mutating func claim(_ band: inout Band, _ serial: String, score: Int, handover: Bool, _ now: Double,
                                _ out: inout [Action]) {
        let epoch = (band.top?.epoch ?? 0) + 1
        guard epoch <= FleetProtocol.maximumEpoch else { return }
        let lease = Lease(holder: self.board, epoch: epoch, state: .claimed, ttl: self.policy.leaseTTL,
                          scoreTenths: score)
        band.top = lease
        band.topSince = now
        band.topExpires = now + Double(lease.ttl)
        band.role = .claiming(epoch: epoch, since: now)
        band.freeSince = nil
        band.evidenceSince = nil
        out.append(.count(handover ? .handoverClaimed : .claimed))
        self.publishLease(lease, serial, &out)
    }

    /// Whether `band` has no link that counts as contact: idle, or retrying a link that was lost. A retry in flight
    /// does not hold the lease: bluetoothd's LE initiator waits out its whole connect timeout (20 s by default) on a
    /// wristband that walked away, and meanwhile no other board could take it. A first attempt after a claim does
    /// hold it (the wristband was heard when it was claimed, and connecting an E4 takes a few seconds).
    private static func awaitsContact(_ band: Band) -> Bool {
        switch band.link {
        case .idle: true
        case .connecting: band.linkLost
        case .connected, .disconnecting: false
        }
    }

    private mutating func release(_ band: inout Band, _ serial: String, why: String, _ now: Double,
                                  _ out: inout [Action]) {
        if var top = band.top, top.holder == self.board {
            top.state = .released
            band.top = top
            self.publishLease(top, serial, &out)
        }
        band.role = .none
        out.append(.count(.released))
        out.append(.log("fleet: \(serial): released: \(why)"))
        self.letGo(&band, serial, reason: .released, now, &out)
    }

    /// Starts an attempt for a held wristband when it is idle, its retry is due and an adapter is free; releases it
    /// when the board has no slot for it at all.
    private mutating func pumpConnect(_ band: inout Band, _ serial: String, _ now: Double, _ out: inout [Action]) {
        guard case .idle(let retryAt) = band.link, now >= retryAt else { return }
        // `band` is out of `self.bands` while it is evaluated: count its slot from the others only.
        self.bands[serial] = band
        if let adapter = self.chooseAdapter(for: band, now) {
            band.link = .connecting(adapter: adapter)
            out.append(.connect(serial: serial, adapter: adapter))
            return
        }
        let anyFree = self.adapters.contains { self.freeSlots(on: $0) > 0 }
        let anyPending = self.bands.values.contains {
            if case .disconnecting = $0.link { return true }
            if case .connecting = $0.link { return true }
            return false
        }
        if !anyFree && !anyPending {
            self.release(&band, serial, why: "no free connection slot on this board", now, &out)
        }
    }
}
