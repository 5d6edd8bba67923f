#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import Logging
@testable import MQTT
import Testing
import TestSupport

/// ``MQTTClient/defersReads``: while a periodic tick runs, the broker's socket is read by the tick, not on arrival
/// (issue #20), and what must still be noticed at once is.
@Suite(.serialized) struct MQTTDeferredReadTests {
    /// A connected client with deferred reads, and a tick every `period` that reads and then publishes `perTick`
    /// QoS 1 messages, as the agent's batch tick does; `ticks` ticks, then one more read.
    struct TickRun {
        var ticks = 0
        var reads: UInt64 = 0
        var wakeUps: UInt64 = 0
        var acknowledged = 0
        var acknowledgedOutsideTicks = 0
        var published = 0
        /// Messages of earlier ticks not acknowledged once a tick's read was done, per tick.
        var unacknowledgedAfterRead: [Int] = []
        /// Acknowledgements outside ticks taken while the socket was corked (`TCP_CORK` read back).
        var corkedOutsideTicks = 0
    }

    /// Whether `client`'s broker socket is corked now.
    static func isCorked(_ client: MQTTClient) -> Bool {
        guard let socket = client.registration?.fileDescriptor.rawValue else { return false }
        var value: CInt = 0
        var length = socklen_t(MemoryLayout<CInt>.size)
        // TCP_CORK is 3 on Linux (not exported by Glibc).
        return getsockopt(socket, CInt(IPPROTO_TCP), 3, &value, &length) == 0 && value != 0
    }

    static func runTicks(deferring: Bool, ticks: Int, perTick: Int, period: Duration) throws -> TickRun {
        let broker = try TestBroker()
        let loop = try EventLoop()
        defer { loop.close() }
        let (logger, logs) = Logger.test()
        let client = try MQTTClient(options: .test(broker, "ticker"), eventLoop: loop, logger: logger)
        defer { client.close() }
        var run = TickRun()
        var inTick = false
        var readsAtStart: UInt64 = 0
        var wakeUpsAtStart: UInt64 = 0
        var timer: TimerHandle?
        client.onAcknowledgement = { _, outcome in
            #expect(outcome.isDelivered)
            run.acknowledged += 1
            if !inTick {
                run.acknowledgedOutsideTicks += 1
                if Self.isCorked(client) { run.corkedOutsideTicks += 1 }
            }
        }
        let payload = Array(repeating: UInt8(ascii: "x"), count: 150)
        let events = EventRecorder()
        events.attach(to: client)
        events.onConnect = {
            client.defersReads = deferring
            readsAtStart = client.socketReadCount
            wakeUpsAtStart = loop.wakeUpCount
            timer = try? loop.scheduleTimer(after: period, repeating: period) {
                inTick = true
                defer { inTick = false }
                client.readDeferred()
                run.unacknowledgedAfterRead.append(run.published - run.acknowledged)
                guard run.ticks < ticks else {
                    if let timer { loop.cancel(timer) }
                    run.reads = client.socketReadCount - readsAtStart
                    run.wakeUps = loop.wakeUpCount - wakeUpsAtStart
                    loop.stop()
                    return
                }
                run.ticks += 1
                payload.withUnsafeBytes { bytes in
                    for _ in 0..<perTick {
                        do {
                            try client.publish(topic: "test/deferred", payload: bytes, qos: 1)
                            run.published += 1
                        } catch {
                            Issue.record("publish: \(error)")
                        }
                    }
                }
            }
        }
        try client.start()
        try loop.runForTest()
        #expect(events.errors.isEmpty, "\(logs.events.map(\.message))")
        return run
    }

    @Test func withTicksRunningTheSocketIsReadOncePerTickAndTheLoopWakesOnlyForTheTick() throws {
        let ticks = 10
        let run = try Self.runTicks(deferring: true, ticks: ticks, perTick: 10, period: .milliseconds(100))
        #expect(run.published == 100)
        // Every PUBACK is taken by the next tick's read (the last ones by the read after the last tick).
        #expect(run.acknowledged == 100)
        #expect(run.acknowledgedOutsideTicks == 0)
        // One read per tick (plus the closing read); a second pass only when more arrived during the first.
        #expect(run.reads >= UInt64(ticks + 1) && run.reads <= UInt64(ticks + 1) + 3, "reads \(run.reads)")
        // The loop wakes for the tick's timer only: no wake-up for the acknowledgements.
        #expect(run.wakeUps <= UInt64(ticks + 1) + 2, "wake-ups \(run.wakeUps)")
    }

    @Test func beyondTheBrokersReceiveMaximumAcknowledgementsAreReadOnArrival() throws {
        // mosquitto lets 20 messages be in flight (CONNACK Receive Maximum); libmosquitto holds the rest until
        // PUBACKs arrive. Deferring those reads would let out 20 messages a tick: while any wait, the socket is
        // read on arrival, and every tick finds the last one's messages all acknowledged.
        let run = try Self.runTicks(deferring: true, ticks: 6, perTick: 90, period: .milliseconds(200))
        #expect(run.published == 540)
        #expect(run.acknowledged == 540)
        #expect(run.unacknowledgedAfterRead.allSatisfy { $0 == 0 }, "\(run.unacknowledgedAfterRead)")
        #expect(run.acknowledgedOutsideTicks > 0)
        // Each of those PUBACKs lets a held message out, written from inside the read: the read runs corked, so
        // what it lets out leaves in one segment, not one each.
        #expect(run.corkedOutsideTicks > 0 && run.corkedOutsideTicks == run.acknowledgedOutsideTicks,
                "\(run.corkedOutsideTicks) of \(run.acknowledgedOutsideTicks) corked")
    }

    @Test func withoutDeferralEveryAcknowledgementIsReadOnArrival() throws {
        let ticks = 10
        let run = try Self.runTicks(deferring: false, ticks: ticks, perTick: 10, period: .milliseconds(100))
        #expect(run.acknowledged == 100)
        // batch_ms = 0: the loop wakes for the broker's input; readDeferred() reads nothing.
        #expect(run.acknowledgedOutsideTicks == 100)
        // Nothing waits beyond the broker's Receive Maximum: reads on arrival are not corked.
        #expect(run.corkedOutsideTicks == 0)
        #expect(run.reads >= UInt64(ticks))
        #expect(run.wakeUps >= UInt64(2 * ticks), "wake-ups \(run.wakeUps)")
    }

    @Test func aMessageOnASubscriptionArrivesAtTheNextTick() throws {
        let broker = try TestBroker()
        let loop = try EventLoop()
        defer { loop.close() }
        let (logger, logs) = Logger.test()
        let agent = try MQTTClient(options: .test(broker, "agent"), eventLoop: loop, logger: logger)
        let operator_ = try MQTTClient(options: .test(broker, "operator"), eventLoop: loop, logger: logger)
        defer {
            agent.close()
            operator_.close()
        }
        let period = Duration.milliseconds(200)
        var inTick = false
        var sentAt: MonotonicInstant?
        var arrivals: [(delay: Duration, inTick: Bool)] = []
        agent.onMessage = { _ in
            guard let sentAt else { return }
            arrivals.append((sentAt.duration(to: .now), inTick))
            loop.stop()
        }
        let agentEvents = EventRecorder()
        agentEvents.attach(to: agent)
        agentEvents.onConnect = {
            do {
                try agent.subscribe("test/cmd", qos: 1) { _ in
                    agent.defersReads = true
                    _ = try? loop.scheduleTimer(after: period, repeating: period) {
                        inTick = true
                        agent.readDeferred()
                        inTick = false
                    }
                    try? operator_.start()
                }
            } catch {
                Issue.record("subscribe: \(error)")
            }
        }
        let operatorEvents = EventRecorder()
        operatorEvents.attach(to: operator_)
        operatorEvents.onConnect = {
            // Half a tick in, so that the message waits for the next one.
            _ = try? loop.scheduleTimer(after: .milliseconds(50)) {
                sentAt = .now
                _ = try? operator_.publish(topic: "test/cmd", payload: Array("stop".utf8), qos: 1)
            }
        }
        try agent.start()
        try loop.runForTest()
        #expect(arrivals.count == 1, "\(logs.events.map(\.message))")
        if let arrival = arrivals.first {
            #expect(arrival.inTick, "the command woke the loop instead of waiting for the tick")
            // Within one tick interval (and a margin for a loaded machine).
            #expect(arrival.delay < period + .milliseconds(150), "\(arrival.delay)")
        }
    }

    @Test(arguments: [SIGTERM, SIGKILL])
    func aBrokerHangUpIsNoticedAtOnceWithoutATick(signal: CInt) throws {
        let broker = try TestBroker()
        let loop = try EventLoop()
        defer { loop.close() }
        let (logger, logs) = Logger.test()
        var options = MQTTClient.Options.test(broker, "deferring")
        options.reconnectInitial = .seconds(30)  // stay down, so the report is not overtaken by a retry
        let client = try MQTTClient(options: options, eventLoop: loop, logger: logger)
        defer { client.close() }
        var hungUpAt: MonotonicInstant?
        var noticedAfter: Duration?
        let events = EventRecorder()
        events.attach(to: client)
        events.onConnect = {
            client.defersReads = true
            _ = try? loop.scheduleTimer(after: .milliseconds(100)) {
                hungUpAt = .now
                if signal == SIGKILL { broker.send(SIGKILL) } else { broker.stop() }
            }
        }
        events.onDisconnect = { _ in
            if let hungUpAt { noticedAfter = hungUpAt.duration(to: .now) }
            loop.stop()
        }
        try client.start()
        // No tick reads the socket; the keepalive (10 s) would take 10–15 s.
        try loop.runForTest(limit: .seconds(8))
        #expect(events.errors.count == 1, "\(logs.events.map(\.message))")
        if let noticedAfter { #expect(noticedAfter < .seconds(2), "\(noticedAfter)") }
        #expect(client.state == .waitingToReconnect)
    }

    @Test func keepaliveHoldsWhileNothingReadsTheSocket() throws {
        let broker = try TestBroker()
        let loop = try EventLoop()
        defer { loop.close() }
        let (logger, logs) = Logger.test()
        var options = MQTTClient.Options.test(broker, "quiet")
        options.keepaliveSeconds = 5  // libmosquitto's minimum: PINGREQ after 5 s, given up after 5 s more
        let client = try MQTTClient(options: options, eventLoop: loop, logger: logger)
        defer { client.close() }
        let events = EventRecorder()
        events.attach(to: client)
        events.onConnect = { client.defersReads = true }
        try client.start()
        // Two keepalives and more: the PINGRESPs are read only by the keepalive timer itself.
        try loop.run(for: .seconds(12))
        #expect(events.errors.isEmpty, "\(events.errors.map(\.message)) \(logs.events.map(\.message))")
        #expect(events.connectedCount == 1)
        #expect(client.state == .connected)
    }
}
