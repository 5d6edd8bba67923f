#if canImport(Glibc)
import Glibc
#endif
import Agent
import CAllocationCounter
import Config
import E4
import EventLoop
import MQTT

/// The agent's own hand-off (SPEC §8, §11), through ``AgentPipelineProbe``: the real `AgentRuntime`, built from a
/// configuration file by `ConfigurationLoader` as `empalinkd` builds it, with one wristband's `DevicePublisher`.
/// An iteration is one BVP and one ACC notification: decode, timestamps, IBI engine, the publisher's batches,
/// JSON into the shared buffer, `Outbox.publish`, then `mosquitto_publish` or the spool.
///
/// - `agent.publish.connected`: `batch_ms` 0, broker connected, QoS 1, MQTT 5: each notification is published
///   at once; the loop runs until every message is acknowledged (PUBACK read and counted by the outbox).
/// - `agent.publish.flush`: `batch_ms` 60 000 (the timer never fires by itself while measuring), the
///   notifications go into the batches and then ``AgentPipelineProbe/flushTick()`` — the batch timer's firing —
///   publishes them, acknowledged as above.
/// - `agent.publish.deferred`: `batch_ms` 250, so the batch tick reads the broker's socket (issue #20,
///   ``MQTTClient/defersReads``): each iteration's pair goes into the batches, ``AgentPipelineProbe/flushTick()``
///   reads what the broker sent and publishes, and the PUBACKs are taken by ``AgentPipelineProbe/readBroker()``
///   (the next tick's first step) without the loop: the deferred read path, measured. The case fails if the reads
///   were not deferred.
/// - `agent.publish.always`: as `agent.publish.connected` with `spool.mode = "always"`: each message is appended
///   to the spool in flight, staged, published once the writer has written it (the loop wakes on the writer's
///   eventfd), and its PUBACK releases the spool record. `fsync_interval_ms` is 60 000 here: the spool persists
///   its acknowledgement ledger at most once per 5 × that interval (a one-shot timer and the snapshot's list, 2
///   allocations per ledger write, about one per 5 s with the defaults): periodic, not per notification, and kept
///   out of the per-notification count this way.
/// - `agent.publish.spooled`: the broker has gone away (stopped, the disconnection seen by the agent): every
///   message goes to the spool, whose writer thread runs.
///
/// libmosquitto's copies of each message are reported apart (`libmosquitto=`), as in ``MQTTChecks``; what our
/// code allocates (`ours=`) must be 0.
enum AgentPipelineChecks {
    static let serial = "9ff167"

    static func run(iterations: Int) throws(CheckError) -> [AllocationMeasurement] {
        // Every allocation's stack is captured to attribute it; about 20 per iteration (two or three QoS 1
        // messages, 8 libmosquitto allocations each) must fit the counter's stack storage.
        let iterations = min(iterations, Int(ALLOC_COUNTER_MAX_STACKS) / 32)
        let broker = try MosquittoProcess()
        let scratch = try ScratchDirectory()
        var results: [AllocationMeasurement] = []
        results.append(try Self.connected(broker: broker, scratch: scratch, iterations: iterations, flush: false))
        results.append(try Self.connected(broker: broker, scratch: scratch, iterations: iterations, flush: true))
        results.append(try Self.connected(broker: broker, scratch: scratch, iterations: iterations, flush: true,
                                          deferred: true))
        results.append(try Self.connected(broker: broker, scratch: scratch, iterations: iterations, flush: false,
                                          spoolMode: "always"))
        results.append(try Self.heartRate(broker: broker, scratch: scratch, iterations: iterations))
        // Last: it stops the broker.
        results.append(try Self.spooled(broker: broker, scratch: scratch, iterations: iterations))
        return results
    }

    /// The configuration `empalinkd` would load for the case, from a file written into `scratch`.
    static func configuration(_ name: String, scratch: ScratchDirectory, port: Int, batchMilliseconds: Int,
                              spoolMode: String = "offline") throws(CheckError) -> AgentConfiguration
    {
        let text = """
            [agent]
            id = "alloc-check"
            control_socket = "\(scratch.path)/\(name).sock"

            [mqtt]
            host = "127.0.0.1"
            port = \(port)
            client_id = "alloc-check-\(name)"
            protocol = "5"
            qos = 1
            topic_prefix = "empalink"

            [publish]
            batch_ms = \(batchMilliseconds)

            [spool]
            dir = "\(scratch.path)/\(name)-spool"
            mode = "\(spoolMode)"
            fsync_interval_ms = \(spoolMode == "always" ? 60_000 : 1000)

            """
        let path = try scratch.write(name + ".toml", text)
        do {
            return try ConfigurationLoader.load(path: path)
        } catch {
            let reasons = error.diagnostics.map { $0.formatted(path: path) }
            throw CheckError("\(name): configuration: \(reasons.joined(separator: "; "))")
        }
    }

    /// A probe for `name`, connected to `broker`.
    static func connectedProbe(_ name: String, broker: MosquittoProcess, scratch: ScratchDirectory,
                               batchMilliseconds: Int, spoolMode: String = "offline") throws(CheckError)
        -> AgentPipelineProbe
    {
        let configuration = try Self.configuration(name, scratch: scratch, port: broker.port,
                                                   batchMilliseconds: batchMilliseconds, spoolMode: spoolMode)
        let probe: AgentPipelineProbe
        do {
            probe = try AgentPipelineProbe(configuration: configuration, serial: Self.serial)
        } catch {
            throw CheckError("\(name): \(error)")
        }
        let loop = probe.eventLoop
        probe.onConnectionEvent = { _ in loop.stop() }
        do {
            try probe.startMQTT()
            let guardTimer = try loop.scheduleTimer(after: .seconds(10)) { loop.stop() }
            loop.run()
            loop.cancel(guardTimer)
        } catch {
            throw CheckError("\(name): MQTT start: \(error)")
        }
        probe.onConnectionEvent = nil
        guard probe.isConnected else { throw CheckError("\(name): no connection to mosquitto on \(broker.port)") }
        return probe
    }

    static func connected(broker: MosquittoProcess, scratch: ScratchDirectory, iterations: Int, flush: Bool,
                          spoolMode: String = "offline", deferred: Bool = false) throws(CheckError)
        -> AllocationMeasurement
    {
        let always = spoolMode == "always"
        let name = always ? "agent.publish.always" : deferred ? "agent.publish.deferred"
            : flush ? "agent.publish.flush" : "agent.publish.connected"
        let probe = try Self.connectedProbe(name, broker: broker, scratch: scratch,
                                            batchMilliseconds: deferred ? 250 : flush ? 60_000 : 0,
                                            spoolMode: spoolMode)
        defer { probe.close() }
        let loop = probe.eventLoop
        // In always mode a message is published only once the spool's writer has written it: every one appended
        // (spooled) must be published and acknowledged.
        func waiting(_ counters: AgentPipelineProbe.Counters) -> Bool {
            counters.acknowledged < counters.published || (always && counters.acknowledged < counters.spooled)
        }
        // Stop the loop once nothing published is waiting for its PUBACK.
        probe.onAcknowledgement = { [unowned probe] in
            if !waiting(probe.counters) { loop.stop() }
        }
        var failures = 0
        let guardTimer = try? loop.scheduleTimer(after: .seconds(120)) {
            failures += 1
            loop.stop()
        }
        defer { if let guardTimer { loop.cancel(guardTimer) } }
        var feed = NotificationFeed()
        var notDeferred = 0
        let body = {
            feed.sendPair(to: probe)
            if flush { probe.flushTick() }
            if deferred {
                // The loop does not wake for PUBACKs now: read them as the next tick would, once they are queued
                // (mosquitto answers a tick's messages within ~40 ms here, as in the other cases; the bound keeps a broken
                // deferral from hanging the check).
                if !probe.readsBrokerAtTick { notDeferred += 1 }
                var spins = 0
                while waiting(probe.counters) && spins < 20_000 {
                    usleep(50)
                    probe.readBroker()
                    spins += 1
                }
            }
            if waiting(probe.counters) { loop.run() }
        }
        // Past the IBI engine's start-up (60 s of data), so IBI and HR messages are published while counting;
        // their first publication also creates their topics' state in the broker connection.
        for _ in 0..<(60 * 64 / 11) { body() }
        let before = probe.counters
        // Ours: 0 in release. Debug only: the MQTT client's `IOEvents` array literals at
        // MQTTClient+Connection.swift:108 and :118 (and `SetAlgebra.init` over them), about 8 per socket wake-up;
        // the PUBACKs of an iteration's two or three messages arrive in one to three wake-ups.
        let limit = Budget.perIteration(release: 0, debug: 24, iterations)
        var measurement = AllocationMeasurement.measure(name, iterations: iterations, warmUp: 0, limit: limit,
                                                        classifyLibrary: true, body)
        // Not counted: let what is still on its way (a control-plane message the metrics timer published during a
        // slow debug run, its PUBACK) settle before the counters are compared. Until nothing waits: the loop
        // finishes the pass in which the last PUBACK stopped it, and a timer of that pass may publish once more
        // (a run under load failed so: 2358 of 2359 acknowledged). In always mode also until every record the
        // window spooled is published: the absolute counters include control-plane messages that are published
        // without being spooled, so they alone can read settled with the window's last record still with the
        // writer (an idle-machine run failed so: spooled 1179, published 1178). The next PUBACK stops the loop
        // again; the guard timer bounds it all.
        func unsettled() -> Bool {
            let window = probe.counters - before
            return waiting(probe.counters) || (always && window.spooled > window.published)
        }
        while unsettled() && failures == 0 { loop.run() }
        let during = probe.counters - before
        // Two messages per iteration (BVP, ACC) plus the IBI and HR events of the beats that fell in it; in always
        // mode each of them appended (spooled) and published, besides any control-plane message (status, metrics).
        // Every message published was acknowledged by the end (a PUBACK counted in the window may be for a message
        // published just before it: a comparison within the window alone failed now and then).
        let after = probe.counters
        if deferred && notDeferred > 0 {
            measurement.failure = "the broker's socket was read by the loop, not the tick, in \(notDeferred) iterations"
        } else if failures > 0 || during.published < 2 * UInt64(iterations) || after.acknowledged < after.published
            || (always ? during.spooled < 2 * UInt64(iterations) || during.spooled > during.published
                : during.spooled != 0)
            || during.dropped != 0 || during.oversized != 0
        {
            measurement.failure = "\(failures) timeouts; \(during)"
        } else if UInt64(alloc_counter_stack_count()) < measurement.allocations {
            measurement.failure = "stack capture full: not every allocation was attributed"
        }
        printError("\(name): \(during.published) messages published and acknowledged for \(iterations) pairs")
        return measurement
    }

    /// `agent.publish.hrs`: a heart-rate strap's notifications (SPEC §16), one a second with one or two RR
    /// intervals and a contact change every 20, through the hrs profile's decoder, published at once (`batch_ms` 0)
    /// and acknowledged: `hr`, `ibi` and `contact` messages.
    static func heartRate(broker: MosquittoProcess, scratch: ScratchDirectory, iterations: Int)
        throws(CheckError) -> AllocationMeasurement
    {
        let name = "agent.publish.hrs"
        let probe = try Self.connectedProbe(name, broker: broker, scratch: scratch, batchMilliseconds: 0)
        defer { probe.close() }
        let loop = probe.eventLoop
        probe.onAcknowledgement = { [unowned probe] in
            if probe.counters.acknowledged >= probe.counters.published { loop.stop() }
        }
        var failures = 0
        let guardTimer = try? loop.scheduleTimer(after: .seconds(120)) {
            failures += 1
            loop.stop()
        }
        defer { if let guardTimer { loop.cancel(guardTimer) } }
        var second = 0
        var packet = InlineArray<6, UInt8>(repeating: 0)
        let body = {
            second += 1
            let contact = second % 40 < 20
            let beats = second % 4 == 0 ? 2 : 1
            packet[0] = contact ? 0x16 : 0x14
            packet[1] = 75
            for index in 0..<beats {
                packet[2 + 2 * index] = 0x34
                packet[3 + 2 * index] = 0x03
            }
            let count = 2 + 2 * beats
            packet.span.withUnsafeBytes { raw in
                probe.deliverHeartRate(UnsafeRawBufferPointer(rebasing: raw[0..<count]),
                                       arrival: DeviceStreamsChecks.start + Double(second))
            }
            if probe.counters.acknowledged < probe.counters.published { loop.run() }
        }
        for _ in 0..<64 { body() }
        let before = probe.counters
        let limit = Budget.perIteration(release: 0, debug: 24, iterations)
        var measurement = AllocationMeasurement.measure(name, iterations: iterations, warmUp: 0, limit: limit,
                                                        classifyLibrary: true, body)
        // Until nothing waits, as in ``connected(broker:scratch:iterations:flush:spoolMode:)``.
        while probe.counters.acknowledged < probe.counters.published && failures == 0 { loop.run() }
        let during = probe.counters - before
        // hr and ibi every notification, contact every 20.
        let after = probe.counters
        if failures > 0 || during.published < 2 * UInt64(iterations) || after.acknowledged < after.published
            || during.spooled != 0 || during.dropped != 0 || during.oversized != 0
        {
            measurement.failure = "\(failures) timeouts; \(during)"
        } else if UInt64(alloc_counter_stack_count()) < measurement.allocations {
            measurement.failure = "stack capture full: not every allocation was attributed"
        }
        printError("\(name): \(during.published) messages published and acknowledged for \(iterations) notifications")
        return measurement
    }

    /// The broker goes away: stopped, and the agent has seen the disconnection. Every message is then spooled.
    static func spooled(broker: MosquittoProcess, scratch: ScratchDirectory, iterations: Int)
        throws(CheckError) -> AllocationMeasurement
    {
        let name = "agent.publish.spooled"
        let probe = try Self.connectedProbe(name, broker: broker, scratch: scratch, batchMilliseconds: 0)
        defer { probe.close() }
        let loop = probe.eventLoop
        broker.stop()
        probe.onConnectionEvent = { event in
            if case .disconnected = event { loop.stop() }
        }
        do {
            let guardTimer = try loop.scheduleTimer(after: .seconds(10)) { loop.stop() }
            loop.run()
            loop.cancel(guardTimer)
        } catch {
            throw CheckError("\(name): \(error)")
        }
        probe.onConnectionEvent = nil
        guard !probe.isConnected else { throw CheckError("\(name): still connected after the broker stopped") }
        var feed = NotificationFeed()
        // The loop does not run while counting (nothing to wait for); the spool's writer thread drains the ring.
        // The first message of each stream finds the broker away (an `MQTTError` is made and caught) and is
        // spooled; later ones go behind it in the spool without trying the broker (SPEC §11 order).
        for _ in 0..<(60 * 64 / 11) { feed.sendPair(to: probe) }
        let before = probe.counters
        var measurement = AllocationMeasurement.measure(name, iterations: iterations, warmUp: 0, limit: 0) {
            feed.sendPair(to: probe)
        }
        let during = probe.counters - before
        if during.spooled < 2 * UInt64(iterations) || during.published != 0 || during.dropped != 0 {
            measurement.failure = "\(during)"
        }
        printError("\(name): \(during.spooled) messages spooled for \(iterations) pairs")
        return measurement
    }
}

extension AgentPipelineProbe.Counters: CustomStringConvertible {
    public var description: String {
        "published=\(self.published) acknowledged=\(self.acknowledged) spooled=\(self.spooled) "
            + "dropped=\(self.dropped) oversized=\(self.oversized)"
    }

    static func - (lhs: Self, rhs: Self) -> Self {
        Self(published: lhs.published - rhs.published, acknowledged: lhs.acknowledged - rhs.acknowledged,
             spooled: lhs.spooled - rhs.spooled, dropped: lhs.dropped - rhs.dropped,
             oversized: lhs.oversized - rhs.oversized)
    }
}
