import Testing

@testable import EmpaLink

/// Discovery, background mode and the watchdog without a bus: scenarios, and every reachable state under every
/// event with the invariants checked at each.
@Suite struct DiscoveryLifecycleTests {
    typealias Machine = DiscoveryLifecycle
    typealias Conditions = DiscoveryLifecycle.Conditions

    static let ready = Conditions()

    static func discovering(watchdogSeconds: Int = 2) -> Machine {
        var machine = Machine(watchdogSeconds: watchdogSeconds)
        #expect(machine.handle(.discoverRequested, conditions: ready) == [.startDiscovery])
        #expect(machine.handle(.startReplied(.started), conditions: ready) == [.startWatchdog])
        #expect(machine.started && !machine.requestInFlight)
        return machine
    }

    @Test func oneRequestAtATimeAndTheLastWishWins() {
        var machine = Machine(watchdogSeconds: 2)
        #expect(machine.handle(.discoverRequested, conditions: Self.ready) == [.startDiscovery])
        // Cancelled while StartDiscovery is in flight: nothing more now; the stop follows its answer.
        #expect(machine.handle(.cancelRequested, conditions: Self.ready).isEmpty)
        #expect(machine.handle(.startReplied(.started), conditions: Self.ready) == [.startWatchdog, .stopDiscovery])
        #expect(machine.handle(.stopReplied, conditions: Self.ready).isEmpty)
        #expect(!machine.started && !machine.requestInFlight)
    }

    @Test func aRefusedStartIsCountedAndRetriedAfterAPauseThatDoubles() {
        var machine = Machine(watchdogSeconds: 2)
        _ = machine.handle(.discoverRequested, conditions: Self.ready)
        let refused = Machine.StartReply.failed(name: "org.bluez.Error.NotReady", message: "Resource Not Ready")
        // Not retried at once (a persistent refusal would be a busy loop of calls), nor by a reconcile meanwhile.
        #expect(machine.handle(.startReplied(refused), conditions: Self.ready)
                == [.discoveryFailed(name: "org.bluez.Error.NotReady", message: "Resource Not Ready"),
                    .armRetry(seconds: 1)])
        #expect(machine.handle(.reconcile, conditions: Self.ready).isEmpty)
        #expect(machine.handle(.retryTick, conditions: Self.ready) == [.startDiscovery])
        #expect(machine.handle(.startReplied(refused), conditions: Self.ready)
                == [.discoveryFailed(name: "org.bluez.Error.NotReady", message: "Resource Not Ready"),
                    .armRetry(seconds: 2)])
        #expect(machine.handle(.retryTick, conditions: Self.ready) == [.startDiscovery])
        #expect(machine.handle(.startReplied(.started), conditions: Self.ready) == [.startWatchdog])
        #expect(machine.started && machine.retrySeconds == 1)
    }

    /// bluetoothd 5.66 answers `InProgress` both when our session exists and when the kernel would not scan yet
    /// (it then drops the session it made for us): seen in the real-BlueZ VM while an LE connection was being made.
    @Test func aBusyStartIsNotTakenForARunningSessionButClearedAndStartedAgain() {
        var machine = Machine(watchdogSeconds: 2)
        _ = machine.handle(.discoverRequested, conditions: Self.ready)
        #expect(machine.handle(.startReplied(.busy), conditions: Self.ready)
                == [.discoveryFailed(name: "org.bluez.Error.InProgress", message: "BlueZ busy"), .armRetry(seconds: 1)])
        #expect(!machine.started && !machine.watchdogRunning)
        // Stop whatever session there may be, then start.
        #expect(machine.handle(.retryTick, conditions: Self.ready) == [.stopDiscovery])
        #expect(machine.handle(.stopReplied, conditions: Self.ready) == [.startDiscovery])
        #expect(machine.handle(.startReplied(.started), conditions: Self.ready) == [.startWatchdog])
        #expect(machine.started)
    }

    @Test func aBusyStartNoLongerWantedStillStopsThePossibleSession() {
        var machine = Machine(watchdogSeconds: 2)
        _ = machine.handle(.discoverRequested, conditions: Self.ready)
        _ = machine.handle(.startReplied(.busy), conditions: Self.ready)
        // The wristband connected meanwhile: no scan wanted, but a session of ours may still be scanning.
        #expect(machine.handle(.reconcile, conditions: Conditions(demand: false)) == [.stopDiscovery])
        #expect(machine.handle(.stopReplied, conditions: Conditions(demand: false)).isEmpty)
        #expect(machine.handle(.retryTick, conditions: Conditions(demand: false)).isEmpty)
        #expect(machine.handle(.reconcile, conditions: Self.ready) == [.startDiscovery])
    }

    @Test func noDemandStopsDiscoveryAndDemandStartsItAgain() {
        var machine = Self.discovering()
        #expect(machine.handle(.reconcile, conditions: Conditions(demand: false)) == [.stopDiscovery])
        _ = machine.handle(.stopReplied, conditions: Conditions(demand: false))
        // The watchdog's tick stops itself with discovery: no idle wake-ups.
        #expect(machine.handle(.watchdogTick, conditions: Conditions(demand: false)) == [.stopWatchdog])
        #expect(machine.handle(.reconcile, conditions: Self.ready) == [.startDiscovery])
    }

    @Test func backgroundWithoutAMonitorDutyCyclesDiscovery() {
        var machine = Self.discovering()
        #expect(machine.handle(.backgroundRequested, conditions: Self.ready) == [.stopDiscovery, .registerMonitor])
        _ = machine.handle(.stopReplied, conditions: Self.ready)
        // No monitor: a window opens at once, and then every interval.
        #expect(machine.handle(.monitorRegistered(false), conditions: Self.ready)
                == [.startDutyCycle, .startDiscovery, .armWindow])
        _ = machine.handle(.startReplied(.started), conditions: Self.ready)
        #expect(machine.handle(.windowEnded, conditions: Self.ready) == [.stopDiscovery])
        _ = machine.handle(.stopReplied, conditions: Self.ready)
        #expect(machine.handle(.dutyCycleTick, conditions: Self.ready) == [.startDiscovery, .armWindow])
        // Resume: continuous discovery, the duty cycle and the open window's timer gone.
        _ = machine.handle(.startReplied(.started), conditions: Self.ready)
        #expect(machine.handle(.resumeRequested, conditions: Self.ready)
                == [.unregisterMonitor, .stopDutyCycle, .cancelWindow])
        #expect(machine.started && machine.windowOpen)
    }

    @Test func aWindowTimerFromBeforeAResumeDoesNotCloseALaterWindow() {
        var machine = Self.discovering()
        _ = machine.handle(.backgroundRequested, conditions: Self.ready)
        _ = machine.handle(.stopReplied, conditions: Self.ready)
        _ = machine.handle(.monitorRegistered(false), conditions: Self.ready)
        _ = machine.handle(.resumeRequested, conditions: Self.ready)
        // The cancelled window's timer fires anyway (it was already due): the foreground keeps discovering.
        #expect(machine.handle(.windowEnded, conditions: Self.ready).isEmpty)
        #expect(machine.windowOpen)
    }

    @Test func backgroundWithAMonitorStopsDiscoveryAltogether() {
        var machine = Self.discovering()
        _ = machine.handle(.backgroundRequested, conditions: Self.ready)
        _ = machine.handle(.stopReplied, conditions: Self.ready)
        #expect(machine.handle(.monitorRegistered(true), conditions: Self.ready).isEmpty)
        #expect(!machine.started && !machine.dutyCycling)
    }

    @Test func theWatchdogEscalatesStepByStepAndAnAdvertisementResetsIt() {
        var machine = Self.discovering(watchdogSeconds: 2)
        var steps: [Machine.Action] = []
        for _ in 0..<6 { steps += machine.handle(.watchdogTick, conditions: Self.ready) }
        #expect(steps == [.escalate(.restartDiscovery), .escalate(.powerCycle), .escalate(.giveUp), .updateStatus])
        #expect(machine.watchdogReason?.contains("no advertisement for 2 s") == true)
        #expect(machine.handle(.advertisement, conditions: Self.ready) == [.updateStatus])
        #expect(machine.watchdogReason == nil && machine.watchdogLevel == 0)
    }

    @Test func aRestartStopsAndStartsDiscoveryAgain() {
        var machine = Self.discovering(watchdogSeconds: 1)
        #expect(machine.handle(.watchdogTick, conditions: Self.ready) == [.escalate(.restartDiscovery)])
        #expect(machine.handle(.restartStopReplied, conditions: Self.ready) == [.startDiscovery])
    }

    @Test func theSlowRetryStartsOverAndAnAdvertisementInBetweenClearsTheReason() {
        var machine = Self.discovering(watchdogSeconds: 1)
        for _ in 0..<3 { _ = machine.handle(.watchdogTick, conditions: Self.ready) }
        #expect(machine.watchdogReason != nil)
        // Four periods of silence: the level goes back to 0 (the next tick restarts discovery again)...
        for _ in 0..<4 { _ = machine.handle(.watchdogTick, conditions: Self.ready) }
        #expect(machine.watchdogLevel == 0)
        // ...and an advertisement right then must still clear the verdict.
        #expect(machine.handle(.advertisement, conditions: Self.ready) == [.updateStatus])
        #expect(machine.watchdogReason == nil)
    }

    @Test func aDisabledWatchdogNeverTicks() {
        var machine = Machine(watchdogSeconds: 0)
        _ = machine.handle(.discoverRequested, conditions: Self.ready)
        #expect(machine.handle(.startReplied(.started), conditions: Self.ready).isEmpty)
        #expect(machine.handle(.watchdogTick, conditions: Self.ready).isEmpty)
    }

    @Test func bluezGoingAwayForgetsTheSessionAndItsRequest() {
        var machine = Machine(watchdogSeconds: 2)
        _ = machine.handle(.discoverRequested, conditions: Self.ready)
        _ = machine.handle(.bluezGone, conditions: Conditions(bluezAvailable: false, adapterUsable: false))
        #expect(!machine.requestInFlight && !machine.started)
        // A late answer from the old owner is not taken for the next request's.
        #expect(machine.handle(.startReplied(.started), conditions: Self.ready).isEmpty)
        #expect(!machine.started)
        #expect(machine.handle(.reconcile, conditions: Self.ready) == [.startDiscovery])
    }

    // MARK: Every reachable state, every event

    static let allConditions: [Conditions] = [false, true].flatMap { bluez in
        [false, true].flatMap { usable in
            [false, true].map { demand in Conditions(bluezAvailable: bluez, adapterUsable: usable, demand: demand) }
        }
    }

    static let events: [Machine.Event] = [
        .discoverRequested, .cancelRequested, .backgroundRequested, .resumeRequested, .monitorRegistered(true),
        .monitorRegistered(false), .dutyCycleTick, .windowEnded, .startReplied(.started),
        .startReplied(.busy), .startReplied(.failed(name: "org.bluez.Error.Failed", message: "")),
        .stopReplied, .reconcile, .adapterUnusable, .bluezGone, .advertisement, .watchdogTick, .restartStopReplied,
        .retryTick,
    ]

    static func invariantViolations(_ machine: Machine) -> [String] {
        var problems: [String] = []
        if !machine.inBackground, !machine.windowOpen || machine.dutyCycling || machine.windowArmed {
            problems.append("background state outside background mode")
        }
        if machine.watchdogReason != nil, machine.watchdogLevel == 0, machine.silentSeconds == 0 {
            problems.append("a stale watchdog verdict")
        }
        if machine.watchdogSeconds == 0, machine.watchdogRunning { problems.append("a disabled watchdog ticks") }
        return problems
    }

    static func actionViolations(before: Machine, after: Machine, event: Machine.Event, conditions: Conditions,
                                 actions: [Machine.Action]) -> [String] {
        var problems: [String] = []
        let requests = actions.filter { $0 == .startDiscovery || $0 == .stopDiscovery }
        if requests.count > 1 { problems.append("two discovery requests at once") }
        let answers: Bool
        switch event {
        case .startReplied, .stopReplied: answers = true
        default: answers = false
        }
        if !requests.isEmpty, before.requestInFlight, !answers { problems.append("a request while one is in flight") }
        if requests.first == .startDiscovery, !after.wanted(conditions) { problems.append("discovery not wanted") }
        if actions.contains(where: { if case .escalate = $0 { true } else { false } }),
           !(before.started && before.wanted(conditions)) {
            problems.append("an escalation while not discovering for a reason")
        }
        if event == .reconcile, !after.requestInFlight, !after.retryArmed, conditions.bluezAvailable,
           after.started != after.wanted(conditions) {
            problems.append("reconcile left discovery out of step")
        }
        return problems
    }

    /// Discovery that is wanted in the foreground gets started once BlueZ answers what is in flight.
    static func converges(_ machine: Machine) -> Bool {
        var machine = machine
        for _ in 0..<6 {
            if machine.started && !machine.requestInFlight { return true }
            let event: Machine.Event = machine.requestInFlight
                ? (machine.started ? .stopReplied : .startReplied(.started))
                : machine.retryArmed ? .retryTick : .reconcile
            _ = machine.handle(event, conditions: Self.ready)
        }
        return machine.started
    }

    @Test func everyReachableStateKeepsTheInvariantsUnderEveryEvent() {
        let initial = Machine(watchdogSeconds: 2)
        var seen: Set<Machine> = [initial]
        var frontier = [initial]
        var transitions = 0
        var failures: [String] = []
        while let machine = frontier.popLast() {
            for event in Self.events {
                for conditions in Self.allConditions {
                    var next = machine
                    let actions = next.handle(event, conditions: conditions)
                    transitions += 1
                    var problems = Self.invariantViolations(next)
                        + Self.actionViolations(before: machine, after: next, event: event, conditions: conditions,
                                                actions: actions)
                    if next.wantsDiscovery, !next.inBackground, !Self.converges(next) {
                        problems.append("wanted discovery never starts")
                    }
                    if next.watchdogRunning, !next.started,
                       !{ var probe = next; return probe.handle(.watchdogTick, conditions: conditions) }()
                           .contains(.stopWatchdog) {
                        problems.append("an idle watchdog keeps ticking")
                    }
                    if !problems.isEmpty, failures.count < 10 {
                        failures.append("\(machine) + \(event) under \(conditions): \(problems)")
                    }
                    if seen.insert(next).inserted { frontier.append(next) }
                }
            }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
        #expect(seen.contains { $0.watchdogReason != nil } && seen.contains { $0.dutyCycling })
        print("discovery lifecycle: \(seen.count) states, \(transitions) transitions checked")
    }
}
