import Testing

@testable import EmpaLink

/// The connection lifecycle without a bus: scenarios, the race cases earlier fixes addressed, and an exhaustive walk
/// of every state reachable from a fresh device under every event, checking the invariants at each.
@Suite struct ConnectionLifecycleTests {
    typealias Machine = ConnectionLifecycle
    typealias Link = ConnectionLifecycle.LinkView

    static let idleLink = Link()
    static let upLink = Link(connected: true, servicesResolved: true)
    static let linkedOnly = Link(connected: true)
    static let gone = Link(exported: false)
    static let noBlueZ = Link(bluezAvailable: false, exported: false)
    static let bluezError = EmpaLinkError.bluez(name: "org.bluez.Error.Failed", message: "le-connection-abort-by-local")

    /// Drives a fresh machine to a streaming session (attempt 1), checking each step's actions.
    static func connected() -> Machine {
        var machine = Machine(label: "9ff167")
        #expect(machine.handle(.connectRequested(autoReconnect: true), link: idleLink)
                == [.report(.connecting), .arm(.deadline), .connect(attempt: 1)])
        #expect(machine.handle(.connectReplied(attempt: 1, .success), link: upLink)
                == [.checkProfile(attempt: 1, final: false)])
        #expect(machine.handle(.profileChecked(attempt: 1, .complete, final: false), link: upLink)
                == [.subscribe(attempt: 1)])
        #expect(machine.handle(.streamsSubscribed(attempt: 1), link: upLink) == [.startSession(attempt: 1)])
        #expect(machine.handle(.sessionStarted(attempt: 1), link: upLink)
                == [.cancel(.deadline), .sessionUp, .report(.connected), .reconcileDiscovery])
        #expect(machine.status == .connected && machine.phase == .idle && machine.armed.isEmpty)
        return machine
    }

    // MARK: Scenarios

    @Test func servicesResolvedAfterTheConnectReplyStartTheProfileCheck() {
        var machine = Machine(label: "9ff167")
        _ = machine.handle(.connectRequested(autoReconnect: true), link: Self.idleLink)
        #expect(machine.handle(.connectReplied(attempt: 1, .success), link: Self.linkedOnly).isEmpty)
        #expect(machine.phase == .resolvingServices)
        // Other properties changing do nothing until ServicesResolved is true.
        #expect(machine.handle(.propertiesChanged(connectedBecameFalse: false), link: Self.linkedOnly).isEmpty)
        // bluetoothd 5.66 may never signal Connected = true: ServicesResolved alone is enough.
        #expect(machine.handle(.propertiesChanged(connectedBecameFalse: false), link: Link(servicesResolved: true))
                == [.checkProfile(attempt: 1, final: false)])
    }

    @Test func inProgressWaitsForServicesUnderTheSameDeadline() {
        var machine = Machine(label: "9ff167")
        _ = machine.handle(.connectRequested(autoReconnect: true), link: Self.idleLink)
        #expect(machine.handle(.connectReplied(attempt: 1, .inProgress), link: Self.idleLink).isEmpty)
        #expect(machine.phase == .resolvingServices && machine.armed == [.deadline])
        #expect(!machine.linkRequested)
    }

    @Test func aRefusedConnectBacksOffAndRetries() {
        var machine = Machine(label: "9ff167")
        _ = machine.handle(.connectRequested(autoReconnect: true), link: Self.idleLink)
        #expect(machine.handle(.connectReplied(attempt: 1, .failure(Self.bluezError)), link: Self.idleLink)
                == [.attemptFailed(Self.bluezError), .cancel(.deadline), .closeStreams(stopNotify: true),
                    .connectionEnded, .report(.disconnected), .armReconnect(failures: 1)])
        #expect(machine.handle(.timerFired(.reconnect), link: Self.idleLink)
                == [.report(.connecting), .arm(.deadline), .connect(attempt: 2)])
        // A second failure backs off longer.
        _ = machine.handle(.connectReplied(attempt: 2, .failure(Self.bluezError)), link: Self.idleLink)
        #expect(machine.armed == [.reconnect] && machine.failures == 2)
    }

    @Test func withoutAutoReconnectAFailureEndsTheWish() {
        var machine = Machine(label: "9ff167")
        _ = machine.handle(.connectRequested(autoReconnect: false), link: Self.idleLink)
        let actions = machine.handle(.connectReplied(attempt: 1, .failure(Self.bluezError)), link: Self.idleLink)
        #expect(!actions.contains(.armReconnect(failures: 1)))
        #expect(!machine.wantsConnection && machine.armed.isEmpty)
    }

    @Test func aTimedOutAttemptReleasesItsLinkBeforeTheNextStarts() {
        var machine = Machine(label: "9ff167")
        _ = machine.handle(.connectRequested(autoReconnect: true), link: Self.idleLink)
        #expect(machine.handle(.timerFired(.deadline), link: Self.idleLink)
                == [.attemptFailed(.timedOut("connecting to 9ff167")), .closeStreams(stopNotify: true),
                    .connectionEnded, .report(.disconnected), .disconnect(.release)])
        // The device reappearing meanwhile asks for an attempt; it waits for the release.
        #expect(machine.handle(.objectsChanged, link: Self.idleLink).isEmpty)
        #expect(machine.phase == .releasing(retry: true, linkDown: false))
        #expect(machine.handle(.disconnectReplied(.release, succeeded: true), link: Self.linkedOnly)
                == [.arm(.linkDown)])
        #expect(machine.phase == .awaitingLinkDown(retry: true))
        // The link's Connected = false ends the release, and the asked-for attempt starts at once.
        #expect(machine.handle(.propertiesChanged(connectedBecameFalse: true), link: Self.idleLink)
                == [.cancel(.linkDown), .report(.connecting), .arm(.deadline), .connect(attempt: 2)])
    }

    @Test func connectedFalseBeforeTheReleaseReplyEndsTheReleaseOnTheReply() {
        var machine = Machine(label: "9ff167")
        _ = machine.handle(.connectRequested(autoReconnect: true), link: Self.idleLink)
        _ = machine.handle(.connectReplied(attempt: 1, .success), link: Self.linkedOnly)
        _ = machine.handle(.stepFailed(attempt: 1, Self.bluezError), link: Self.linkedOnly)
        #expect(machine.phase == .releasing(retry: false, linkDown: false))
        #expect(machine.handle(.propertiesChanged(connectedBecameFalse: true), link: Self.idleLink).isEmpty)
        #expect(machine.phase == .releasing(retry: false, linkDown: true))
        // Nothing is left to wait for: the backoff runs.
        #expect(machine.handle(.disconnectReplied(.release, succeeded: true), link: Self.idleLink)
                == [.armReconnect(failures: 1)])
    }

    @Test func aReleaseThatNeverSeesConnectedFalseEndsAfterTheWait() {
        var machine = Machine(label: "9ff167")
        _ = machine.handle(.connectRequested(autoReconnect: true), link: Self.idleLink)
        _ = machine.handle(.timerFired(.deadline), link: Self.idleLink)
        _ = machine.handle(.disconnectReplied(.release, succeeded: true), link: Self.idleLink)
        #expect(machine.handle(.timerFired(.linkDown), link: Self.idleLink) == [.armReconnect(failures: 1)])
        #expect(machine.phase == .idle)
    }

    @Test func aDisconnectWaitsForTheLinkBeforeAReconnectStarts() {
        var machine = Self.connected()
        #expect(machine.handle(.disconnectRequested, link: Self.upLink)
                == [.report(.disconnecting), .closeStreams(stopNotify: true), .disconnect(.requested)])
        // A reload that removed and re-added the serial connects again meanwhile: nothing starts yet.
        #expect(machine.handle(.connectRequested(autoReconnect: true), link: Self.upLink).isEmpty)
        #expect(machine.handle(.disconnectReplied(.requested, succeeded: true), link: Self.upLink) == [.arm(.linkDown)])
        #expect(machine.status == .disconnecting)
        // The late Connected = false finishes our disconnect; only then does the new attempt start, so the signal
        // cannot end it.
        #expect(machine.handle(.propertiesChanged(connectedBecameFalse: true), link: Self.idleLink)
                == [.cancel(.linkDown), .connectionEnded, .report(.disconnected), .reconcileDiscovery,
                    .report(.connecting), .arm(.deadline), .connect(attempt: 2)])
    }

    @Test func aDisconnectOfALinkNeverHeldFinishesOnTheReply() {
        var machine = Machine(label: "9ff167")
        _ = machine.handle(.connectRequested(autoReconnect: true), link: Self.idleLink)
        _ = machine.handle(.disconnectRequested, link: Self.idleLink)
        #expect(!machine.disconnectHeldLink)
        #expect(machine.handle(.disconnectReplied(.requested, succeeded: true), link: Self.idleLink)
                == [.connectionEnded, .report(.disconnected), .reconcileDiscovery])
        #expect(!machine.wantsConnection && machine.armed.isEmpty)
    }

    @Test func aStaleConnectReplyAfterADisconnectIsIgnored() {
        var machine = Machine(label: "9ff167")
        _ = machine.handle(.connectRequested(autoReconnect: true), link: Self.idleLink)
        _ = machine.handle(.disconnectRequested, link: Self.idleLink)
        #expect(machine.handle(.connectReplied(attempt: 1, .success), link: Self.upLink).isEmpty)
        #expect(!machine.linkRequested && machine.phase == .idle)
    }

    @Test func aStaleResolvingServicesCannotSurviveADisconnect() {
        var machine = Machine(label: "9ff167")
        _ = machine.handle(.connectRequested(autoReconnect: true), link: Self.idleLink)
        _ = machine.handle(.connectReplied(attempt: 1, .inProgress), link: Self.idleLink)
        _ = machine.handle(.disconnectRequested, link: Self.idleLink)
        _ = machine.handle(.disconnectReplied(.requested, succeeded: true), link: Self.idleLink)
        #expect(machine.handle(.propertiesChanged(connectedBecameFalse: false), link: Self.upLink).isEmpty)
        #expect(machine.status == .disconnected && machine.phase == .idle)
    }

    @Test func ourLateDisconnectReplyIsNotTakenForAReleaseReply() {
        var machine = Self.connected()
        _ = machine.handle(.disconnectRequested, link: Self.upLink)
        _ = machine.handle(.connectRequested(autoReconnect: true), link: Self.upLink)
        // Connected = false comes before bluetoothd's reply; attempt 2 starts and times out: its release is in flight.
        _ = machine.handle(.propertiesChanged(connectedBecameFalse: true), link: Self.idleLink)
        _ = machine.handle(.timerFired(.deadline), link: Self.idleLink)
        #expect(machine.phase == .releasing(retry: false, linkDown: false))
        // The reply to our first Disconnect arrives only now: it says nothing of the release's link.
        #expect(machine.handle(.disconnectReplied(.requested, succeeded: true), link: Self.idleLink).isEmpty)
        #expect(machine.phase == .releasing(retry: false, linkDown: false))
    }

    @Test func servicesBeforeTheirObjectsWaitForTheProfile() {
        var machine = Machine(label: "9ff167")
        _ = machine.handle(.connectRequested(autoReconnect: true), link: Self.idleLink)
        _ = machine.handle(.connectReplied(attempt: 1, .success), link: Self.upLink)
        // Only battery and tag missing: go on after a second without new objects.
        let batteryMissing = Machine.Event.profileChecked(attempt: 1, .missingOptional("battery"), final: false)
        #expect(machine.handle(batteryMissing, link: Self.upLink) == [.arm(.profileSettle)])
        #expect(machine.handle(.objectsChanged, link: Self.upLink) == [.checkProfile(attempt: 1, final: false)])
        #expect(machine.handle(batteryMissing, link: Self.upLink) == [.cancel(.profileSettle), .arm(.profileSettle)])
        #expect(machine.handle(.timerFired(.profileSettle), link: Self.upLink)
                == [.checkProfile(attempt: 1, final: true)])
        #expect(machine.handle(.profileChecked(attempt: 1, .missingOptional("battery"), final: true), link: Self.upLink)
                == [.subscribe(attempt: 1)])
    }

    @Test func aRequiredCharacteristicThatNeverComesFailsAtTheSecondDeadline() {
        var machine = Machine(label: "9ff167")
        _ = machine.handle(.connectRequested(autoReconnect: true), link: Self.idleLink)
        _ = machine.handle(.connectReplied(attempt: 1, .success), link: Self.upLink)
        let check = Machine.ProfileCheck.missingRequired(missing: "command", reason: "no command characteristic")
        #expect(machine.handle(.profileChecked(attempt: 1, check, final: false), link: Self.upLink).isEmpty)
        #expect(machine.phase == .awaitingProfile(missing: "command"))
        // The first deadline looks once more, under a second deadline.
        #expect(machine.handle(.timerFired(.deadline), link: Self.upLink)
                == [.arm(.deadline), .checkProfile(attempt: 1, final: true)])
        let mismatch = EmpaLinkError.profileMismatch("no command characteristic")
        #expect(machine.handle(.profileChecked(attempt: 1, check, final: true), link: Self.upLink)
                == [.attemptFailed(mismatch), .cancel(.deadline), .closeStreams(stopNotify: true), .connectionEnded,
                    .report(.disconnected), .disconnect(.release)])
    }

    @Test func aSecondDeadlineWithTheProfileStillIncompleteTimesOut() {
        var machine = Machine(label: "9ff167")
        _ = machine.handle(.connectRequested(autoReconnect: true), link: Self.idleLink)
        _ = machine.handle(.connectReplied(attempt: 1, .success), link: Self.upLink)
        let check = Machine.ProfileCheck.missingRequired(missing: "bvp", reason: "no BVP characteristic")
        _ = machine.handle(.profileChecked(attempt: 1, check, final: false), link: Self.upLink)
        _ = machine.handle(.timerFired(.deadline), link: Self.upLink)
        // The final check's answer never comes (the device went quiet): the second deadline fails the attempt.
        let actions = machine.handle(.timerFired(.deadline), link: Self.upLink)
        #expect(actions.first == .attemptFailed(.timedOut("connecting to 9ff167")))
    }

    @Test func aLostLinkReconnectsWithoutBackoffAndCountsTheLoss() {
        var machine = Self.connected()
        #expect(machine.handle(.streamClosed, link: Self.idleLink)
                == [.linkLost, .closeStreams(stopNotify: true), .connectionEnded, .report(.disconnected),
                    .armReconnect(failures: 0), .reconcileDiscovery])
        // A second socket's hang-up of the same loss does nothing more.
        #expect(machine.handle(.streamClosed, link: Self.idleLink).isEmpty)
    }

    @Test func aVanishedDeviceIsWaitedForUntilItIsSeenAgain() {
        var machine = Self.connected()
        _ = machine.handle(.deviceGone, link: Self.gone)
        #expect(!machine.present)
        // The backoff runs out while the device is still gone: nothing to connect to.
        #expect(machine.handle(.timerFired(.reconnect), link: Self.gone).isEmpty)
        _ = machine.handle(.deviceSeen, link: Self.idleLink)
        #expect(machine.handle(.objectsChanged, link: Self.idleLink)
                == [.report(.connecting), .arm(.deadline), .connect(attempt: 2)])
    }

    @Test func bluezComingBackStartsTheWantedAttempt() {
        var machine = Machine(label: "9ff167")
        #expect(machine.handle(.connectRequested(autoReconnect: true), link: Self.noBlueZ).isEmpty)
        #expect(machine.handle(.bluezAvailable(devicePresent: true), link: Self.idleLink)
                == [.report(.connecting), .arm(.deadline), .connect(attempt: 1)])
    }

    @Test func timersCancelledMeanwhileDoNothingWhenTheyFire() {
        var machine = Self.connected()
        for timer in Machine.Timer.allCases {
            #expect(machine.handle(.timerFired(timer), link: Self.upLink).isEmpty)
        }
        #expect(machine.status == .connected)
    }

    // MARK: Every reachable state, every event

    /// A state without its attempt number (every event is generated relative to it) and with the failure count
    /// capped (it only sets the backoff's length): reachable states are finitely many.
    struct Key: Hashable {
        var status: DeviceStatus
        var phase: ConnectionPhase
        var flags: [Bool]
        var failures: Int
        var armed: [ConnectionLifecycle.Timer]

        init(_ machine: Machine) {
            self.status = machine.status
            self.phase = machine.phase
            self.flags = [machine.wantsConnection, machine.autoReconnect, machine.present, machine.linkRequested,
                          machine.disconnectHeldLink, machine.deadlineIsFirst]
            self.failures = min(machine.failures, 2)
            self.armed = machine.armed.sorted { "\($0)" < "\($1)" }
        }
    }

    static func events(for machine: Machine) -> [Machine.Event] {
        let current = machine.attempt
        let stale = current &- 1
        var events: [Machine.Event] = [
            .connectRequested(autoReconnect: true), .connectRequested(autoReconnect: false), .disconnectRequested,
            .disconnectReplied(.requested, succeeded: true), .disconnectReplied(.requested, succeeded: false),
            .disconnectReplied(.release, succeeded: true), .disconnectReplied(.release, succeeded: false),
            .propertiesChanged(connectedBecameFalse: true), .propertiesChanged(connectedBecameFalse: false),
            .objectsChanged, .deviceGone, .bluezAvailable(devicePresent: true),
            .bluezAvailable(devicePresent: false), .deviceSeen, .streamClosed,
        ]
        events += Machine.Timer.allCases.map { .timerFired($0) }
        for attempt in [current, stale] {
            events += [.connectReplied(attempt: attempt, .success), .connectReplied(attempt: attempt, .inProgress),
                       .connectReplied(attempt: attempt, .failure(Self.bluezError)),
                       .streamsSubscribed(attempt: attempt), .sessionStarted(attempt: attempt),
                       .stepFailed(attempt: attempt, Self.bluezError)]
            for final in [false, true] {
                events += [.profileChecked(attempt: attempt, .complete, final: final),
                           .profileChecked(attempt: attempt, .missingOptional("tag"), final: final),
                           .profileChecked(attempt: attempt, .missingRequired(missing: "bvp", reason: "no BVP"),
                                           final: final)]
            }
        }
        return events
    }

    static let links = [idleLink, upLink, linkedOnly, Link(servicesResolved: true), gone, noBlueZ]

    /// What must hold in every reachable state.
    static func invariantViolations(_ machine: Machine) -> [String] {
        var problems: [String] = []
        let connecting: [ConnectionPhase] = [.linking, .resolvingServices, .subscribing]
        if Set(machine.armed.map { "\($0)" }).count != machine.armed.count { problems.append("a timer armed twice") }
        if machine.status == .connecting, !machine.armed.contains(.deadline) {
            problems.append("an attempt without a deadline can hang")
        }
        if machine.status != .connecting,
           machine.armed.contains(.deadline) || machine.armed.contains(.profileSettle) {
            problems.append("an attempt's timer outlives it")
        }
        if connecting.contains(machine.phase) || machine.phase.isAwaitingProfile, machine.status != .connecting {
            problems.append("an attempt's step outside an attempt")
        }
        if machine.phase.releaseRetry != nil, machine.status != .disconnected {
            problems.append("a release while not disconnected")
        }
        let awaitingLinkDown = if case .awaitingLinkDown = machine.phase { true } else { false }
        if machine.armed.contains(.linkDown), !(machine.status == .disconnecting || awaitingLinkDown) {
            problems.append("a link-down wait with nothing waiting for it")
        }
        if machine.armed.contains(.reconnect),
           !(machine.status == .disconnected && machine.phase == .idle && machine.wantsConnection) {
            problems.append("a reconnect armed while not waiting to reconnect")
        }
        return problems
    }

    /// What must hold of every transition's actions.
    static func actionViolations(before: Machine, event: Machine.Event, actions: [Machine.Action]) -> [String] {
        var problems: [String] = []
        for (index, action) in actions.enumerated() {
            guard case .connect = action else { continue }
            // Every Connect starts an attempt that has a deadline...
            if index < 2 || actions[index - 1] != .arm(.deadline) || actions[index - 2] != .report(.connecting) {
                problems.append("a Connect without a fresh attempt and deadline")
            }
            // ...and never while a failed attempt's link or our disconnect is still being released: its late
            // Connected = false would end the new attempt.
            let endsRelease: Bool
            switch event {
            case .disconnectReplied, .propertiesChanged(connectedBecameFalse: true), .timerFired(.linkDown),
                 .deviceGone:
                endsRelease = true
            default:
                endsRelease = false
            }
            if (before.phase.releaseRetry != nil || before.status == .disconnecting) && !endsRelease {
                problems.append("a Connect before the old link is down")
            }
        }
        let reports = actions.compactMap { action -> DeviceStatus? in
            if case .report(let status) = action { return status }
            return nil
        }
        for pair in zip([before.status] + reports, reports) where pair.0 == pair.1 {
            problems.append("status \(pair.1) reported twice")
        }
        return problems
    }

    /// A wanted connection is never stuck: from every reachable state, BlueZ's ordinary answers (the release
    /// replied, the link down, the timers run, the device seen) lead to a Connect within a few steps.
    static func reachesConnect(from machine: Machine) -> Bool {
        var machine = machine
        let link = Self.idleLink
        for _ in 0..<8 {
            let event: Machine.Event
            if machine.status == .connecting || machine.status == .connected {
                return true
            } else if case .releasing = machine.phase {
                event = .disconnectReplied(.release, succeeded: true)
            } else if machine.status == .disconnecting, !machine.armed.contains(.linkDown) {
                event = .disconnectReplied(.requested, succeeded: true)
            } else if machine.armed.contains(.linkDown) {
                event = .timerFired(.linkDown)
            } else if machine.armed.contains(.reconnect) {
                event = .timerFired(.reconnect)
            } else if !machine.present {
                event = .deviceSeen
            } else {
                event = .objectsChanged
            }
            if machine.handle(event, link: link).contains(where: { if case .connect = $0 { true } else { false } }) {
                return true
            }
        }
        return false
    }

    @Test func everyReachableStateKeepsTheInvariantsUnderEveryEvent() {
        var seen: Set<Key> = [Key(Machine(label: "x"))]
        var frontier = [Machine(label: "x")]
        var transitions = 0
        var failures: [String] = []
        while let machine = frontier.popLast() {
            for event in Self.events(for: machine) {
                for link in Self.links {
                    var next = machine
                    let actions = next.handle(event, link: link)
                    transitions += 1
                    let problems = Self.invariantViolations(next)
                        + Self.actionViolations(before: machine, event: event, actions: actions)
                        + (next.wantsConnection && next.autoReconnect && !Self.reachesConnect(from: next)
                           ? ["a wanted connection is stuck"] : [])
                    if !problems.isEmpty, failures.count < 10 {
                        failures.append("\(Key(machine)) + \(event) with \(link) -> \(Key(next)): \(problems)")
                    }
                    if seen.insert(Key(next)).inserted { frontier.append(next) }
                }
            }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
        // The walk reaches every status and phase (so the invariants were checked where they matter).
        let statuses = Set(seen.map(\.status))
        #expect(statuses == [.disconnected, .connecting, .connected, .disconnecting])
        let phases = Set(seen.map { "\($0.phase)".prefix(while: { $0 != "(" }) })
        #expect(phases == ["idle", "linking", "resolvingServices", "awaitingProfile", "subscribing", "releasing",
                           "awaitingLinkDown"])
        print("connection lifecycle: \(seen.count) states, \(transitions) transitions checked")
    }
}
