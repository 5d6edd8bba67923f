import Testing

@testable import Fleet

/// Each rule of the coordinator on its own, one board, messages written by hand.
@Suite struct FleetCoordinatorTests {
    typealias Coordinator = FleetCoordinator
    typealias Action = FleetCoordinator.Action

    static let serial = "9ff167"
    static let policy = FleetPolicy()

    static func board(_ id: String = "b", adapters: [(String, Int)] = [("hci0", 2)],
                      wristbands: [String] = [serial]) -> Coordinator {
        Coordinator(board: id, prefix: "p", wristbands: wristbands,
                    adapters: adapters.map { .init(name: $0.0, capacity: $0.1) })
    }

    static func leaseMessage(_ lease: Lease, serial: String = serial) -> Coordinator.Event {
        .message(topic: "p/fleet/lease/\(serial)", payload: lease.encoded())
    }

    static func seenMessage(board: String, rssiTenths: Int, free: Int = 1, serial: String = serial)
        -> Coordinator.Event
    {
        .message(topic: "p/fleet/seen/\(serial)/\(board)",
                 payload: Sighting(rssiTenths: rssiTenths, free: free).encoded())
    }

    static func presenceMessage(board: String, online: Bool, session: UInt64) -> Coordinator.Event {
        .message(topic: "p/fleet/board/\(board)",
                 payload: BoardPresence(online: online, session: session, adapters: []).encoded())
    }

    /// The leases a batch of actions publishes on `serial`'s lease topic.
    static func leases(_ actions: [Action], serial: String = serial) -> [Lease] {
        actions.compactMap {
            guard case .publish(let topic, let payload, _, _) = $0, topic == "p/fleet/lease/\(serial)" else {
                return nil
            }
            return try? Lease.decode(payload)
        }
    }

    static func connects(_ actions: [Action]) -> [String] {
        actions.compactMap { if case .connect(let serial, let adapter) = $0 { "\(serial)@\(adapter)" } else { nil } }
    }

    /// Runs ticks every 0.25 s from `from` through `to`, hearing `heard` (serial → dBm) before each; all actions.
    /// Each sighting comes from every adapter of the board, or from those in `hearing`.
    static func run(_ board: inout Coordinator, from: Double, to: Double, heard: [String: Double] = [serial: -60],
                    hearing: [String]? = nil) -> [Action]
    {
        var out: [Action] = []
        var now = from
        while now <= to + 1e-9 {
            for (serial, rssi) in heard.sorted(by: { $0.key < $1.key }) {
                for adapter in hearing ?? board.adapters.map(\.name) {
                    out += board.handle(.localSighting(serial: serial, rssi: rssi, adapter: adapter), now: now)
                }
            }
            out += board.handle(.tick, now: now)
            now += 0.25
        }
        return out
    }

    /// A board that holds `serial` at epoch 1 from t = 12 (after the grace and the settle), connected.
    static func holder(_ id: String = "b") -> Coordinator {
        var board = Self.board(id)
        _ = board.handle(.brokerConnected, now: 0)
        _ = Self.run(&board, from: 0, to: 12)
        _ = board.handle(.connected(serial: serial, adapter: "hci0"), now: 12.5)
        return board
    }

    @Test func aFreeLeaseIsClaimedAfterTheGraceAndConnectedAfterTheSettle() {
        var board = Self.board()
        let connected = board.handle(.brokerConnected, now: 0)
        #expect(connected.contains {
            if case .publish(let topic, _, true, nil) = $0 { topic == "p/fleet/board/b" } else { false }
        })
        let early = Self.run(&board, from: 0, to: 9.75)
        #expect(Self.leases(early).isEmpty, "nothing is claimed during the grace")
        let claim = Self.run(&board, from: 10, to: 10)
        #expect(Self.leases(claim) == [Lease(holder: "b", epoch: 1, state: .claimed, ttl: 6, scoreTenths: -600)])
        let settling = Self.run(&board, from: 10.25, to: 11.75)
        #expect(Self.connects(settling).isEmpty, "no connection before the settle window ends")
        let held = Self.run(&board, from: 12, to: 12)
        #expect(Self.leases(held).map(\.state) == [.held])
        #expect(Self.connects(held) == ["9ff167@hci0"])
        #expect(board.role(of: Self.serial) == .holding(epoch: 1, since: 12, renewed: 12))
    }

    @Test func aLowerRankedBoardClaimsOneStaggerLater() {
        var board = Self.board("b")
        _ = board.handle(.brokerConnected, now: 0)
        _ = Self.run(&board, from: 0, to: 9.5)
        // Board "a" hears the wristband better: we are second and wait one stagger after the lease looks free.
        _ = board.handle(Self.seenMessage(board: "a", rssiTenths: -550), now: 9.75)
        #expect(Self.leases(Self.run(&board, from: 10, to: 10.75)).isEmpty)
        // A board with no free slot does not rank ahead of us.
        var other = Self.board("b")
        _ = other.handle(.brokerConnected, now: 0)
        _ = Self.run(&other, from: 0, to: 9.5)
        _ = other.handle(Self.seenMessage(board: "a", rssiTenths: -550, free: 0), now: 9.75)
        #expect(Self.leases(Self.run(&other, from: 10, to: 10)).count == 1)
        // Still heard by "a" a second later (its sighting renewed): now we claim.
        _ = board.handle(Self.seenMessage(board: "a", rssiTenths: -550), now: 10.9)
        #expect(Self.leases(Self.run(&board, from: 11, to: 11)).map(\.epoch) == [1])
    }

    @Test(arguments: [true, false])
    func competingClaimsOfOneEpochAreSettledByScoreWhateverTheirOrder(theirsFirst: Bool) {
        // Boards "a" and "b" claim epoch 1 at the same moment; "a" hears it better. Every order of the two claims
        // at either board ends with "a" holding and "b" never connecting.
        var a = Self.board("a")
        var b = Self.board("b")
        _ = a.handle(.brokerConnected, now: 0)
        _ = b.handle(.brokerConnected, now: 0)
        let claimA = Self.leases(Self.run(&a, from: 0, to: 10, heard: [Self.serial: -55]))
        let claimB = Self.leases(Self.run(&b, from: 0, to: 10, heard: [Self.serial: -60]))
        #expect(claimA.count == 1 && claimB.count == 1)
        let own = [claimA[0], claimB[0]]
        var outA: [Action] = []
        var outB: [Action] = []
        for lease in theirsFirst ? own.reversed() : own {
            outA += a.handle(Self.leaseMessage(lease), now: 10.5)
            outB += b.handle(Self.leaseMessage(lease), now: 10.5)
        }
        #expect(outB.contains(.count(.withdrawn)))
        #expect(b.role(of: Self.serial) == FleetCoordinator.Role.none)
        #expect(Self.leases(outB).isEmpty, "the loser publishes nothing")
        outA += Self.run(&a, from: 10.25, to: 13, heard: [Self.serial: -55])
        outB += Self.run(&b, from: 10.25, to: 13, heard: [Self.serial: -60])
        #expect(Self.connects(outA) == ["9ff167@hci0"])
        #expect(Self.connects(outB).isEmpty)
    }

    /// The same leases in any order leave every board with the same view: 500 random sets, 8 orders each.
    @Test func theLeaseViewDoesNotDependOnArrivalOrder() {
        var random = SplitMix64(seed: 0x0DE7)
        for _ in 0..<500 {
            let leases = (0...random.below(6)).map { _ in
                Lease(holder: ["a", "b", "c"][random.below(3)], epoch: UInt64(1 + random.below(3)),
                      state: Lease.State.allCases[random.below(3)], ttl: 6, scoreTenths: [-600, -550][random.below(2)])
            }
            var views: [Lease?] = []
            for _ in 0..<8 {
                var board = Self.board("z")
                _ = board.handle(.brokerConnected, now: 0)
                for lease in leases.shuffled(using: &random) {
                    _ = board.handle(Self.leaseMessage(lease), now: 1)
                }
                views.append(board.lease(of: Self.serial))
            }
            #expect(Set(views).count == 1, "\(leases)")
        }
    }

    @Test func equalScoresGoToTheLowerBoardID() {
        var b = Self.board("b")
        _ = b.handle(.brokerConnected, now: 0)
        _ = Self.run(&b, from: 0, to: 10)
        let theirs = Lease(holder: "a", epoch: 1, state: .claimed, ttl: 6, scoreTenths: -600)
        #expect(b.handle(Self.leaseMessage(theirs), now: 10.2).contains(.count(.withdrawn)))
        // And the other way round: "c" with the same score loses to us.
        var c = Self.board("a")
        _ = c.handle(.brokerConnected, now: 0)
        _ = Self.run(&c, from: 0, to: 10)
        let loser = Lease(holder: "c", epoch: 1, state: .claimed, ttl: 6, scoreTenths: -600)
        #expect(c.handle(Self.leaseMessage(loser), now: 10.2).isEmpty)
        #expect(Self.connects(Self.run(&c, from: 10.25, to: 12)) == ["9ff167@hci0"])
    }

    @Test func aHolderThatSeesAHigherEpochDisconnectsAtOnce() {
        var board = Self.holder()
        let higher = Lease(holder: "z", epoch: 2, state: .claimed, ttl: 6, scoreTenths: -900)
        let out = board.handle(Self.leaseMessage(higher), now: 13)
        #expect(out.contains(.disconnect(serial: Self.serial, reason: .fenced)))
        #expect(out.contains(.count(.fenced)))
        #expect(Self.leases(out).isEmpty)
        // A stale lower epoch (our own late echo) changes nothing afterwards.
        let stale = Lease(holder: "b", epoch: 1, state: .held, ttl: 6, scoreTenths: -600)
        #expect(board.handle(Self.leaseMessage(stale), now: 13.1).isEmpty)
        #expect(board.lease(of: Self.serial)?.holder == "z")
        // And a connection that comes up after all is taken down again.
        _ = board.handle(.disconnected(serial: Self.serial, adapter: "hci0"), now: 13.5)
        #expect(Self.connects(Self.run(&board, from: 13.5, to: 16)).isEmpty)
    }

    @Test func aConnectionForAWristbandWeDoNotHoldIsTakenDown() {
        var board = Self.board()
        _ = board.handle(.brokerConnected, now: 0)
        #expect(board.handle(.connected(serial: Self.serial, adapter: "hci0"), now: 1).first
                == .disconnect(serial: Self.serial, reason: .notLeased))
    }

    @Test func aHolderRenewsEveryThirdOfTheTTL() {
        var board = Self.holder()
        let out = Self.run(&board, from: 12.25, to: 20.25)
        let renewals = Self.leases(out)
        #expect(renewals.count == 4)
        #expect(renewals.allSatisfy { $0 == Lease(holder: "b", epoch: 1, state: .held, ttl: 6, scoreTenths: -600) })
    }

    @Test func anExpiredLeaseIsPickedUpWithTheNextEpoch() {
        var board = Self.board("b")
        _ = board.handle(.brokerConnected, now: 0)
        let held = Lease(holder: "a", epoch: 41, state: .held, ttl: 6, scoreTenths: -500)
        _ = board.handle(Self.leaseMessage(held), now: 10)
        #expect(Self.leases(Self.run(&board, from: 10, to: 15.75)).isEmpty)
        let claims = Self.leases(Self.run(&board, from: 16, to: 16))
        #expect(claims == [Lease(holder: "b", epoch: 42, state: .claimed, ttl: 6, scoreTenths: -600)])
    }

    @Test func aRenewedLeaseIsNotFreeAndItsLifeCountsFromLocalReceipt() {
        var board = Self.board("b")
        _ = board.handle(.brokerConnected, now: 0)
        let held = Lease(holder: "a", epoch: 1, state: .held, ttl: 6, scoreTenths: -500)
        // A late claimed echo of the same lease does not shorten or undo it.
        _ = board.handle(Self.leaseMessage(held), now: 10)
        _ = board.handle(Self.leaseMessage(Lease(holder: "a", epoch: 1, state: .claimed, ttl: 6, scoreTenths: -500)),
                         now: 10.1)
        var out: [Action] = []
        for second in stride(from: 12.0, through: 30, by: 2) {
            out += board.handle(Self.leaseMessage(held), now: second)
            out += Self.run(&board, from: second, to: second + 1.75)
        }
        #expect(Self.leases(out).isEmpty)
        #expect(board.lease(of: Self.serial)?.state == .held)
    }

    @Test func aLeaseOfABoardThatWentOfflineIsFreeAtOnce() {
        var board = Self.board("b")
        _ = board.handle(.brokerConnected, now: 0)
        _ = board.handle(Self.presenceMessage(board: "a", online: true, session: 7), now: 1)
        _ = board.handle(Self.leaseMessage(Lease(holder: "a", epoch: 3, state: .held, ttl: 6, scoreTenths: -500)),
                         now: 10)
        #expect(Self.leases(Self.run(&board, from: 10, to: 11)).isEmpty)
        // Its Last Will: free now, long before the lease would expire.
        _ = board.handle(Self.presenceMessage(board: "a", online: false, session: 7), now: 11.1)
        #expect(Self.leases(Self.run(&board, from: 11.25, to: 11.25)).map(\.epoch) == [4])
    }

    @Test func aLateWillOfAnEarlierSessionDoesNotMakeALiveBoardOffline() {
        var board = Self.board("b")
        _ = board.handle(.brokerConnected, now: 0)
        _ = board.handle(Self.presenceMessage(board: "a", online: true, session: 8), now: 1)
        _ = board.handle(Self.presenceMessage(board: "a", online: false, session: 7), now: 1.1)
        _ = board.handle(Self.leaseMessage(Lease(holder: "a", epoch: 3, state: .held, ttl: 6, scoreTenths: -500)),
                         now: 10)
        #expect(Self.leases(Self.run(&board, from: 10, to: 12)).isEmpty)
        // Within one session, offline is final even if an online presence arrives after it.
        _ = board.handle(Self.presenceMessage(board: "a", online: false, session: 8), now: 12.1)
        _ = board.handle(Self.presenceMessage(board: "a", online: true, session: 8), now: 12.2)
        #expect(Self.leases(Self.run(&board, from: 12.25, to: 12.25)).map(\.epoch) == [4])
    }

    @Test func handoverNeedsALargeSustainedMarginAndAMinimumHold() {
        func challenger(rssi: Double) -> (Coordinator, [Action]) {
            var board = Self.board("b")
            _ = board.handle(.brokerConnected, now: 0)
            var out: [Action] = []
            for second in stride(from: 0.0, through: 60, by: 2) {
                out += board.handle(Self.leaseMessage(Lease(holder: "a", epoch: 5, state: .held, ttl: 6,
                                                             scoreTenths: -750)), now: second)
                out += board.handle(Self.seenMessage(board: "a", rssiTenths: -750), now: second)
                out += Self.run(&board, from: second, to: second + 1.75, heard: [Self.serial: rssi])
            }
            return (board, out)
        }
        // 5 dB better: never.
        #expect(Self.leases(challenger(rssi: -70).1).isEmpty)
        // 15 dB better: only once the holder has held 30 s and the evidence lasted 10 s.
        let (_, out) = challenger(rssi: -60)
        let claims = Self.leases(out).filter { $0.state == .claimed }
        #expect(claims.map(\.epoch) == [6])
        #expect(out.contains(.count(.handoverClaimed)))
    }

    @Test func handoverIsOfferedOnlyByTheBestChallenger() {
        var board = Self.board("b")
        _ = board.handle(.brokerConnected, now: 0)
        var out: [Action] = []
        for second in stride(from: 0.0, through: 60, by: 2) {
            out += board.handle(Self.leaseMessage(Lease(holder: "a", epoch: 5, state: .held, ttl: 6,
                                                         scoreTenths: -750)), now: second)
            out += board.handle(Self.seenMessage(board: "c", rssiTenths: -500), now: second)
            out += Self.run(&board, from: second, to: second + 1.75, heard: [Self.serial: -60])
        }
        #expect(Self.leases(out).isEmpty)
    }

    @Test func aHolderWithoutASlotReleases() {
        var board = Self.holder()
        // The adapter went away (its link with it): no slot is left anywhere.
        let out = board.handle(.adaptersChanged([.init(name: "hci1", capacity: 0)]), now: 13.1)
        #expect(Self.leases(out).map(\.state) == [.released])
        #expect(out.contains(.count(.released)))
        #expect(board.role(of: Self.serial) == FleetCoordinator.Role.none)
    }

    @Test func aHolderThatLostItsWristbandReleasesIt() {
        var board = Self.holder()
        var out = board.handle(.disconnected(serial: Self.serial, adapter: "hci0"), now: 13)
        // Not heard any more, every attempt fails.
        var pending = !Self.connects(out).isEmpty
        var now = 13.25
        while now < 24 {
            if pending {
                let failed = board.handle(.connectFailed(serial: Self.serial, adapter: "hci0"), now: now)
                out += failed
                pending = !Self.connects(failed).isEmpty
            }
            let step = board.handle(.tick, now: now)
            out += step
            pending = pending || !Self.connects(step).isEmpty
            now += 0.25
        }
        #expect(Self.connects(out).count >= 3, "it kept trying first")
        #expect(Self.leases(out).last?.state == .released)
    }

    /// bluetoothd's LE initiator waits out its whole connect timeout (20 s) on a wristband that walked away: a retry
    /// of a lost link still in flight must not hold the lease past ``FleetPolicy/lostRelease`` (`make test-fleet`:
    /// the holder renewed for 10 s after the loss while its retry hung, and the handover gap was 16 s).
    @Test func aHolderWhoseRetryOfALostLinkHangsReleasesAndCancelsIt() {
        var board = Self.holder()
        let lost = 13.0
        var out = board.handle(.disconnected(serial: Self.serial, adapter: "hci0"), now: lost)
        var now = lost
        while now < lost + Self.policy.lostRelease + 1 {
            now += 0.25
            out += board.handle(.tick, now: now)
        }
        #expect(Self.connects(out).count == 1, "one retry, never answered")
        #expect(Self.leases(out).last?.state == .released)
        #expect(out.contains(.disconnect(serial: Self.serial, reason: .released)), "the hanging attempt is cancelled")
        #expect(board.role(of: Self.serial) == FleetCoordinator.Role.none)
    }

    /// A first attempt after a claim is not a lost link: it holds the lease however long BlueZ takes.
    @Test func aSlowFirstConnectionAfterAClaimKeepsTheLease() {
        var board = Self.board()
        _ = board.handle(.brokerConnected, now: 0)
        let claimed = Self.run(&board, from: 0, to: 12)
        #expect(Self.connects(claimed) == ["\(Self.serial)@hci0"], "it claimed and started connecting")
        // The attempt takes 12 s; the agent reports no sighting of a wristband it is connecting.
        var out: [Action] = []
        var now = 12.0
        while now < 24 {
            now += 0.25
            out += board.handle(.tick, now: now)
        }
        #expect(!Self.leases(out).contains { $0.state == .released })
        #expect(!out.contains { if case .disconnect = $0 { true } else { false } })
        out = board.handle(.connected(serial: Self.serial, adapter: "hci0"), now: 24.25)
        guard case .holding? = board.role(of: Self.serial) else {
            Issue.record("the lease was let go during a slow first connection: \(String(describing: board.role(of: Self.serial)))")
            return
        }
    }

    @Test func afterABrokerReconnectHoldersReassertAtOnceAndOthersWaitTheGrace() {
        var holder = Self.holder()
        _ = holder.handle(.brokerDisconnected, now: 20)
        #expect(Self.leases(Self.run(&holder, from: 20, to: 40)).isEmpty, "nothing published while down")
        let back = holder.handle(.brokerConnected, now: 40)
        #expect(Self.leases(back) == [Lease(holder: "b", epoch: 1, state: .held, ttl: 6, scoreTenths: -600)])
        #expect(!back.contains { if case .disconnect = $0 { true } else { false } })

        var other = Self.board("c")
        _ = other.handle(.brokerConnected, now: 0)
        _ = other.handle(Self.leaseMessage(Lease(holder: "b", epoch: 1, state: .held, ttl: 6, scoreTenths: -600)),
                         now: 12)
        _ = other.handle(.brokerDisconnected, now: 20)
        _ = other.handle(.brokerConnected, now: 40)
        // The lease expired long ago by our clock, but the holder may not have reconnected yet.
        #expect(Self.leases(Self.run(&other, from: 40, to: 49.75)).isEmpty)
        #expect(Self.leases(Self.run(&other, from: 50, to: 50)).map(\.epoch) == [2])
    }

    @Test func aClaimInFlightWhenTheBrokerGoesIsAbandonedAndReleasedOnReturn() {
        var board = Self.board("b")
        _ = board.handle(.brokerConnected, now: 0)
        let claim = Self.leases(Self.run(&board, from: 0, to: 10))
        #expect(claim.count == 1)
        _ = board.handle(.brokerDisconnected, now: 10.5)
        #expect(Self.connects(Self.run(&board, from: 10.5, to: 14)).isEmpty)
        _ = board.handle(.brokerConnected, now: 14)
        // The broker gives our abandoned claim back: we say it is free rather than make others wait for it.
        let out = board.handle(Self.leaseMessage(claim[0]), now: 14.1)
        #expect(Self.leases(out).map(\.state) == [.released])
    }

    @Test func connectionsAreSpreadByFreeSlotsWithOneAttemptPerAdapter() {
        let serials = ["000001", "000002", "000003"]
        var board = Self.board("b", adapters: [("hci0", 1), ("hci1", 3)], wristbands: serials)
        _ = board.handle(.brokerConnected, now: 0)
        let heard = Dictionary(uniqueKeysWithValues: serials.map { ($0, -60.0) })
        let out = Self.run(&board, from: 0, to: 12, heard: heard)
        // Three held; hci1 has the most free slots, then hci0 (hci1's attempt is in flight); the third waits.
        #expect(Self.connects(out) == ["000001@hci1", "000002@hci0"])
        let next = board.handle(.connected(serial: "000001", adapter: "hci1"), now: 12.1)
        #expect(Self.connects(next) == ["000003@hci1"])
        // The presence publishes the slots per adapter.
        let presence = next.compactMap { action -> BoardPresence? in
            guard case .publish("p/fleet/board/b", let payload, true, nil) = action else { return nil }
            return try? BoardPresence.decode(payload)
        }
        #expect(presence.last?.adapters == [AdapterSlots(name: "hci0", capacity: 1, free: 0),
                                            AdapterSlots(name: "hci1", capacity: 3, free: 1)])
    }

    /// BlueZ has a device object only on the adapters that heard the wristband: an attempt goes to one of those
    /// (or to the adapter of its last link), before the one with more free slots.
    @Test func anAttemptGoesToAnAdapterThatHeardTheWristband() {
        var board = Self.board("b", adapters: [("hci0", 1), ("hci1", 3)])
        _ = board.handle(.brokerConnected, now: 0)
        let out = Self.run(&board, from: 0, to: 12, hearing: ["hci0"])
        #expect(Self.connects(out) == ["\(Self.serial)@hci0"], "hci1 has more room but never heard it")
        _ = board.handle(.connected(serial: Self.serial, adapter: "hci0"), now: 12.1)
        // Its link is lost and nobody hears it now: the retry goes where the link was.
        let retry = board.handle(.disconnected(serial: Self.serial, adapter: "hci0"), now: 30)
        #expect(Self.connects(retry) == ["\(Self.serial)@hci0"])
        // Heard by neither, a fresh claim elsewhere falls back to free slots.
        var other = Self.board("c", adapters: [("hci0", 1), ("hci1", 3)])
        _ = other.handle(.brokerConnected, now: 0)
        let unheard = Self.run(&other, from: 0, to: 12, hearing: ["hci2"])
        #expect(Self.connects(unheard).isEmpty, "a wristband no adapter of ours heard is not claimed")
    }

    @Test func sightingsArePublishedEveryTwoSecondsWithExpiryAndClearedWhenNoLongerHeard() {
        var board = Self.board("b")
        _ = board.handle(.brokerConnected, now: 0)
        let heard = Self.run(&board, from: 0, to: 4)
        let seen = heard.filter { if case .publish("p/fleet/seen/9ff167/b", _, true, 6) = $0 { true } else { false } }
        #expect(seen.count == 2)
        let silent = Self.run(&board, from: 4.25, to: 12, heard: [:])
        #expect(silent.contains(.clearRetained(topic: "p/fleet/seen/9ff167/b")))
    }

    @Test func hostileMessagesAreCountedDropsAndUnknownWristbandsAreIgnored() {
        var board = Self.board("b")
        _ = board.handle(.brokerConnected, now: 0)
        let drop = board.handle(.message(topic: "p/fleet/lease/9ff167", payload: Array("{\"v\":1}".utf8)), now: 1)
        #expect(drop.first == .count(.messageDropped))
        #expect(drop.count == 2)
        let foreign = Lease(holder: "a", epoch: 9, state: .held, ttl: 6, scoreTenths: -500)
        #expect(board.handle(Self.leaseMessage(foreign, serial: "ffffff"), now: 1).isEmpty)
        #expect(board.lease(of: "ffffff") == nil)
        var random = SplitMix64(seed: 22)
        for index in 0..<2000 {
            let payload = (0..<random.below(64)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let topic = ["p/fleet/lease/9ff167", "p/fleet/seen/9ff167/x", "p/fleet/board/x", "p/fleet/zz"][index % 4]
            _ = board.handle(.message(topic: topic, payload: payload), now: 1 + Double(index) * 0.001)
        }
    }

    @Test func theWillIsOfflineInTheNextSession() throws {
        var board = Coordinator(board: "b", prefix: "p", wristbands: [], adapters: [], incarnation: 100)
        let will = board.will
        #expect(will.topic == "p/fleet/board/b")
        #expect(try BoardPresence.decode(will.payload) == BoardPresence(online: false, session: 101, adapters: []))
        let out = board.handle(.brokerConnected, now: 0)
        guard case .publish(_, let payload, _, _)? = out.first else {
            Issue.record("no presence published")
            return
        }
        #expect(try BoardPresence.decode(payload).session == 101)
    }

    @Test func shutdownReleasesDisconnectsAndSaysOffline() throws {
        var board = Self.holder()
        let out = board.handle(.shutdown, now: 20)
        #expect(Self.leases(out).map(\.state) == [.released])
        #expect(out.contains(.disconnect(serial: Self.serial, reason: .released)))
        guard case .publish("p/fleet/board/b", let payload, true, nil)? = out.last else {
            Issue.record("no offline presence")
            return
        }
        #expect(try !BoardPresence.decode(payload).online)
    }
}
