import EventLoop
import Logging
@testable import MQTT
import Testing
import TestSupport

/// The connection lifecycle without a broker: each transition, the races between the application, libmosquitto's
/// callbacks and the timers, and a breadth-first walk over every state a fresh client can reach.
@Suite struct MQTTConnectionLifecycleTests {
    typealias Lifecycle = MQTTConnectionLifecycle
    typealias Event = MQTTConnectionLifecycle.Event
    typealias Action = MQTTConnectionLifecycle.Action

    // libmosquitto's codes, spelled out: the pure machine passes them through without interpreting them.
    static let connectionLost: CInt = 7  // MOSQ_ERR_CONN_LOST
    static let errnoFailure: CInt = 14  // MOSQ_ERR_ERRNO
    static let invalid: CInt = 3  // MOSQ_ERR_INVAL
    static let notAuthorised = MQTTError(.connectionRefused, "connection refused: not authorised", reasonCode: 135)

    /// A machine moved through `events`, and the actions of the last one.
    static func machine(after events: [Event]) -> Lifecycle {
        var machine = Lifecycle()
        for event in events { _ = machine.handle(event) }
        return machine
    }

    static let connecting: [Event] = [.start, .connectionOpened]
    static let connected: [Event] = [.start, .connectionOpened, .connackAccepted]

    // MARK: - Transitions

    @Test func startArmsKeepaliveAndOpensTheFirstConnection() {
        var machine = Lifecycle()
        #expect(machine.handle(.start) == [.armMiscTimer, .dropSocketWatch, .openConnection(reconnect: false)])
        #expect(machine.state == .connecting)
        #expect(machine.handle(.connectionOpened) == [.watchSocket])
        #expect(machine.hostStored)
    }

    @Test func acceptedConnackRenewsSubscriptionsThenReportsConnected() {
        var machine = Self.machine(after: Self.connecting)
        #expect(machine.handle(.connackAccepted) == [.resubscribe, .report(.connected)])
        #expect(machine.state == .connected)
        #expect(machine.failedAttempts == 0)
    }

    @Test func startingTwiceDoesNothing() {
        var machine = Lifecycle()
        _ = machine.handle(.start)
        #expect(machine.handle(.start) == [])
        _ = machine.handle(.connectionOpened)
        _ = machine.handle(.connackAccepted)
        #expect(machine.handle(.start) == [])
        #expect(machine.state == .connected)
    }

    @Test func refusedConnackIsReportedWhenTheConnectionClosesThenRetriedWithGrowingBackoff() {
        var machine = Self.machine(after: Self.connecting)
        #expect(machine.handle(.connackRefused(Self.notAuthorised)) == [])
        #expect(machine.state == .connecting)
        #expect(
            machine.handle(.connectionLost(result: Self.connectionLost, errno: 0)) == [
                .dropSocketWatch, .failUnsentQoS0, .armReconnectTimer(failedAttempts: 0),
                .report(.retrying(.refused(Self.notAuthorised))),
            ]
        )
        #expect(machine.state == .waitingToReconnect)
        #expect(machine.handle(.reconnectTimerFired) == [.dropSocketWatch, .openConnection(reconnect: true)])
        #expect(machine.refusal == nil, "a refusal belongs to one attempt")
        #expect(machine.handle(.connectionOpened) == [.watchSocket])
        #expect(
            machine.handle(.connectionLost(result: Self.errnoFailure, errno: 111)) == [
                .dropSocketWatch, .failUnsentQoS0, .armReconnectTimer(failedAttempts: 1),
                .report(.retrying(.library(result: Self.errnoFailure, errno: 111, wasConnected: false))),
            ]
        )
        // Accepted at last: the backoff starts over.
        _ = machine.handle(.reconnectTimerFired)
        _ = machine.handle(.connectionOpened)
        _ = machine.handle(.connackAccepted)
        #expect(machine.failedAttempts == 0)
        _ = machine.handle(.loopCallStarting)
        #expect(
            machine.handle(.loopCallFailed(result: Self.connectionLost, errno: 0)) == [
                .dropSocketWatch, .failUnsentQoS0, .armReconnectTimer(failedAttempts: 0),
                .report(.retrying(.library(result: Self.connectionLost, errno: 0, wasConnected: true))),
            ]
        )
    }

    @Test func backoffExponentStopsAtItsCap() {
        var machine = Self.machine(after: [.start])
        for _ in 0..<(Lifecycle.maximumFailedAttempts + 5) {
            _ = machine.handle(.openFailed(result: Self.errnoFailure, errno: 111, hostStored: true))
            _ = machine.handle(.reconnectTimerFired)
        }
        #expect(machine.failedAttempts == Lifecycle.maximumFailedAttempts)
    }

    @Test func aConnectCallThatStoredNothingIsRetriedWithHostAndPort() {
        var machine = Self.machine(after: [.start])
        let actions = machine.handle(.openFailed(result: Self.invalid, errno: 0, hostStored: false))
        #expect(actions.contains(.armReconnectTimer(failedAttempts: 0)))
        #expect(machine.handle(.reconnectTimerFired) == [.dropSocketWatch, .openConnection(reconnect: false)])
        _ = machine.handle(.openFailed(result: Self.errnoFailure, errno: 111, hostStored: true))
        #expect(machine.handle(.reconnectTimerFired) == [.dropSocketWatch, .openConnection(reconnect: true)])
    }

    @Test func disconnectWhileConnectingIgnoresTheLateConnackAndStopsOnce() {
        var machine = Self.machine(after: Self.connecting)
        #expect(machine.handle(.disconnectRequested) == [.sendDisconnect])
        #expect(machine.state == .disconnecting)
        #expect(machine.handle(.connackAccepted) == [], "no connected report after disconnect()")
        #expect(machine.handle(.disconnectSent) == [.watchSocket])
        #expect(
            machine.handle(.connectionLost(result: 0, errno: 0))
                == [.dropSocketWatch, .failUnsentQoS0, .cancelMiscTimer, .report(.stopped)]
        )
        #expect(machine.state == .idle)
        #expect(machine.handle(.disconnectRequested) == [])
    }

    @Test func disconnectWithoutASocketStopsAtOnce() {
        var machine = Self.machine(after: Self.connected)
        _ = machine.handle(.disconnectRequested)
        #expect(
            machine.handle(.disconnectFailed)
                == [.dropSocketWatch, .failUnsentQoS0, .cancelMiscTimer, .report(.stopped)]
        )
        #expect(machine.state == .idle)
    }

    /// libmosquitto writes DISCONNECT inside `mosquitto_disconnect_v5` and runs the disconnect callback there; the
    /// client queues that event before the call's own outcome.
    @Test func connectionLostInsideTheDisconnectCallIsReportedOnce() {
        var machine = Self.machine(after: Self.connected)
        var reports: [Lifecycle.Report] = []
        for event: Event in [
            .disconnectRequested, .libraryEntered, .connectionLost(result: 0, errno: 0), .libraryReturned,
            .disconnectFailed,
        ] {
            for case .report(let report) in machine.handle(event) { reports.append(report) }
        }
        #expect(reports == [.stopped])
        #expect(machine.state == .idle)
    }

    @Test func connectionLostWhileDisconnectingIsTheEndOfTheDisconnect() {
        var machine = Self.machine(after: Self.connected + [.disconnectRequested, .disconnectSent])
        let actions = machine.handle(.loopCallFailed(result: Self.connectionLost, errno: 0))
        #expect(actions == [.dropSocketWatch, .failUnsentQoS0, .cancelMiscTimer, .report(.stopped)])
        #expect(!actions.contains { if case .armReconnectTimer = $0 { true } else { false } })
    }

    @Test func disconnectWhileWaitingCancelsTheRetry() {
        var machine = Self.machine(
            after: [.start, .openFailed(result: Self.errnoFailure, errno: 111, hostStored: true)]
        )
        #expect(
            machine.handle(.disconnectRequested) == [
                .cancelReconnectTimer, .dropSocketWatch, .failUnsentQoS0, .cancelMiscTimer, .report(.stopped),
            ]
        )
        #expect(machine.handle(.reconnectTimerFired) == [], "a late timer after disconnect() does nothing")
        #expect(machine.state == .idle)
        #expect(machine.handle(.start) == [.armMiscTimer, .dropSocketWatch, .openConnection(reconnect: true)])
    }

    @Test func aLoopFailureTheDisconnectCallbackReportedIsNotReportedAgain() {
        var machine = Self.machine(after: Self.connected)
        _ = machine.handle(.loopCallStarting)
        _ = machine.handle(.libraryEntered)
        #expect(machine.handle(.connectionLost(result: Self.connectionLost, errno: 0)).contains(.failUnsentQoS0))
        _ = machine.handle(.libraryReturned)
        #expect(machine.handle(.loopCallFailed(result: Self.connectionLost, errno: 0)) == [])
        #expect(machine.failedAttempts == 1)
    }

    /// The application restarts the client inside the stopped report, itself inside the loop call whose disconnect
    /// callback ended the connection: that call's failure belongs to the old socket, not to the new attempt.
    @Test func aLoopFailureOfTheOldSocketDoesNotEndAnAttemptStartedInsideItsCallback() {
        var machine = Self.machine(after: Self.connected + [.disconnectRequested, .disconnectSent])
        _ = machine.handle(.loopCallStarting)
        _ = machine.handle(.libraryEntered)
        #expect(machine.handle(.connectionLost(result: 0, errno: 0)).contains(.report(.stopped)))
        #expect(machine.handle(.start) == [.armMiscTimer, .dropSocketWatch, .openConnection(reconnect: true)])
        _ = machine.handle(.connectionOpened)
        _ = machine.handle(.libraryReturned)
        #expect(machine.handle(.loopCallFailed(result: Self.connectionLost, errno: 0)) == [])
        #expect(machine.state == .connecting)
    }

    @Test func closeInsideACallbackWaitsForTheOutermostLibraryCall() {
        var machine = Self.machine(after: Self.connected)
        _ = machine.handle(.libraryEntered)
        _ = machine.handle(.libraryEntered)  // e.g. publish inside the connected callback inside loop_read
        #expect(machine.handle(.close) == [])
        #expect(machine.state == .connected, "the handle is still in use")
        #expect(machine.handle(.libraryReturned) == [])
        #expect(
            machine.handle(.libraryReturned) == [
                .dropSocketWatch, .cancelMiscTimer, .cancelReconnectTimer, .releaseHandle, .abandonPending,
                .report(.closed),
            ]
        )
        #expect(machine.state == .closed)
        #expect(!machine.closePending)
    }

    @Test func closingAnIdleClientReleasesWithoutReport() {
        var machine = Lifecycle()
        #expect(
            machine.handle(.close)
                == [.dropSocketWatch, .cancelMiscTimer, .cancelReconnectTimer, .releaseHandle, .abandonPending]
        )
        #expect(machine.handle(.close) == [])
    }

    @Test(arguments: Self.allEvents(libraryDepth: 0))
    func nothingHappensAfterClose(event: Event) {
        var machine = Self.machine(after: Self.connected + [.close])
        let before = machine
        #expect(machine.handle(event) == [])
        #expect(machine == before)
    }

    // MARK: - The client executing the machine, against a real broker

    /// The connected report runs inside libmosquitto's CONNACK callback inside `mosquitto_loop_read`: a `close()`
    /// there must leave the handle alive until libmosquitto has returned, and then release it.
    @Test func closeInsideTheConnectedCallbackReleasesTheHandleAfterLibmosquittoReturns() throws {
        let broker = try TestBroker()
        let loop = try EventLoop()
        defer { loop.close() }
        let (logger, logs) = Logger.test()
        let client = try MQTTClient(options: .test(broker, "closer"), eventLoop: loop, logger: logger)
        defer { client.close() }
        let events = EventRecorder()
        events.attach(to: client)
        var stateAfterClose: MQTTConnectionState?
        var outcomes: [MQTTPublishOutcome] = []
        events.onConnect = {
            client.close()
            stateAfterClose = client.state
            // The handle is still in use: a publish now is taken, then abandoned by the close.
            _ = try? client.publish(topic: "lifecycle/t", payload: [1], qos: 1) { outcomes.append($0) }
        }
        events.onDisconnect = { _ in loop.stop() }
        try client.start()
        try loop.runForTest()
        #expect(stateAfterClose == .connected)
        #expect(client.state == .closed)
        #expect(outcomes == [.abandoned], "\(logs.events.map(\.message))")
        #expect(events.events == [.connected, .disconnected(error: MQTTError(.closed, "closed"), retryIn: nil)])
        #expect(throws: MQTTError.self) { try client.start() }
    }

    // MARK: - Every reachable state

    /// Every event, including the ones that cannot come in a state (a CONNACK while idle): the machine must ignore
    /// them. Library calls nest at most two deep here (a publish inside a callback inside a loop call).
    static func allEvents(libraryDepth: Int) -> [Event] {
        var events: [Event] = [
            .start, .disconnectRequested, .close, .connectionOpened,
            .openFailed(result: Self.errnoFailure, errno: 111, hostStored: true),
            .openFailed(result: Self.invalid, errno: 0, hostStored: false),
            .connackAccepted, .connackRefused(Self.notAuthorised),
            .connectionLost(result: Self.connectionLost, errno: 0),
            .connectionLost(result: Self.errnoFailure, errno: 104),
            .loopCallStarting, .loopCallFailed(result: Self.connectionLost, errno: 0),
            .reconnectTimerFired, .disconnectSent, .disconnectFailed, .libraryReturned,
        ]
        if libraryDepth < 2 { events.append(.libraryEntered) }
        return events
    }

    /// The machine plus what its actions did to the world: the timers, the socket watch, the handle, the reports.
    struct World: Hashable {
        var machine = Lifecycle()
        var reconnectTimerArmed = false
        var miscTimerArmed = false
        var socketWatched = false
        var released = false
        var lastReport: Lifecycle.Report?
    }

    /// Applies one event; returns the violated invariants (empty when all hold).
    static func step(_ world: inout World, _ event: Event) -> [String] {
        var problems: [String] = []
        let before = world
        if event == .reconnectTimerFired {
            world.reconnectTimerArmed = false  // one-shot: a fired timer is no longer armed
        }
        let actions = world.machine.handle(event)
        let after = world.machine.state
        var reports = 0
        for action in actions {
            switch action {
            case .openConnection:
                if before.machine.hasConnection { problems.append("a connection opened while one is open") }
                if after != .connecting { problems.append("opened a connection but is \(after)") }
            case .sendDisconnect:
                if !before.machine.hasConnection { problems.append("DISCONNECT without a connection") }
            case .armReconnectTimer(let failures):
                if world.reconnectTimerArmed { problems.append("reconnect timer armed twice") }
                if failures != before.machine.failedAttempts { problems.append("backoff for the wrong attempt") }
                world.reconnectTimerArmed = true
            case .cancelReconnectTimer:
                world.reconnectTimerArmed = false
            case .armMiscTimer:
                if world.miscTimerArmed { problems.append("misc timer armed twice") }
                world.miscTimerArmed = true
            case .cancelMiscTimer:
                world.miscTimerArmed = false
            case .watchSocket:
                world.socketWatched = true
            case .dropSocketWatch:
                world.socketWatched = false
            case .resubscribe:
                if after != .connected { problems.append("resubscribed while \(after)") }
            case .failUnsentQoS0, .abandonPending:
                break
            case .releaseHandle:
                if world.released { problems.append("handle released twice") }
                if before.machine.libraryDepth > 0 && event != .libraryReturned {
                    problems.append("handle released inside a library call")
                }
                world.released = true
            case .report(let report):
                reports += 1
                switch report {
                case .connected:
                    if before.machine.state != .connecting {
                        problems.append("connected reported from \(before.machine.state)")
                    }
                    if world.lastReport == .connected { problems.append("connected reported twice") }
                case .retrying, .stopped, .closed:
                    if before.machine.state == .idle || before.machine.state == .closed {
                        problems.append("disconnected reported without a connection up or trying")
                    }
                }
                world.lastReport = report
            }
        }
        if reports > 1 { problems.append("\(reports) reports for one event") }
        if before.machine.state == .closed && (!actions.isEmpty || world.machine != before.machine) {
            problems.append("acted after close")
        }
        if world.reconnectTimerArmed != (after == .waitingToReconnect) {
            problems.append("reconnect timer armed: \(world.reconnectTimerArmed), state \(after)")
        }
        let wantsMisc = after == .waitingToReconnect || world.machine.hasConnection
        if world.miscTimerArmed != wantsMisc {
            problems.append("misc timer armed: \(world.miscTimerArmed), state \(after)")
        }
        if world.socketWatched && !world.machine.hasConnection { problems.append("socket watched while \(after)") }
        if world.released != (after == .closed) { problems.append("released: \(world.released), state \(after)") }
        let leftSocket = before.machine.hasConnection && !world.machine.hasConnection
        if leftSocket && !actions.contains(.failUnsentQoS0) && !actions.contains(.abandonPending) {
            problems.append("QoS 0 messages outlive their socket")
        }
        if world.machine.libraryDepth < 0 || world.machine.failedAttempts > Lifecycle.maximumFailedAttempts {
            problems.append("counter out of range")
        }
        if world.machine.closePending && world.machine.libraryDepth == 0 { problems.append("close left pending") }
        return problems
    }

    /// Breadth-first over every world reachable from a fresh client under every event, checking every transition.
    static func walk() -> (worlds: Set<World>, transitions: Int, problems: [String]) {
        var seen: Set<World> = [World()]
        var frontier = [World()]
        var transitions = 0
        var problems: [String] = []
        while !frontier.isEmpty {
            var next: [World] = []
            for world in frontier {
                for event in Self.allEvents(libraryDepth: world.machine.libraryDepth) {
                    var successor = world
                    transitions += 1
                    for problem in Self.step(&successor, event) where problems.count < 20 {
                        problems.append("\(world.machine) + \(event): \(problem)")
                    }
                    if seen.insert(successor).inserted { next.append(successor) }
                }
            }
            frontier = next
        }
        return (seen, transitions, problems)
    }

    @Test func everyReachableStateKeepsTheInvariants() {
        let (worlds, transitions, problems) = Self.walk()
        #expect(problems == [])
        let states = Set(worlds.map(\.machine.state))
        #expect(states == [.idle, .connecting, .connected, .waitingToReconnect, .disconnecting, .closed])
        #expect(worlds.contains { $0.machine.closePending })
        #expect(worlds.contains { $0.machine.failedAttempts == Lifecycle.maximumFailedAttempts })
        print("lifecycle walk: \(worlds.count) states, \(transitions) transitions")
    }
}
