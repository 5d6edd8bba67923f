#if canImport(Glibc)
import Glibc
#endif
@testable import Agent
import Config
import EventLoop
import Foundation
import Logging
import MQTT
@testable import Spool
import Testing
import TestSupport

/// The outbox against a real mosquitto and a real spool: where each message goes (live or spool), and that every
/// (device, stream) arrives in order across an outage and its replay (SPEC §11, §15).
final class OutboxRig {
    let broker: TestBroker
    let loop: EventLoop
    let directory: String
    let spool: Spool
    let mqtt: MQTTClient
    let outbox: Outbox
    let watcher: MQTTClient
    /// Topic and `seq` of every message the watcher received, in arrival order.
    var received: [(topic: String, seq: Int)] = []
    var onConnected: () -> Void = {}
    var expected = 0

    init(mode: AgentConfiguration.SpoolMode) throws {
        self.broker = try TestBroker()
        self.loop = try EventLoop()
        self.directory = try makeTemporaryDirectory("outbox")
        self.spool = try Spool(
            options: SpoolOptions(directory: self.directory + "/spool", fsyncIntervalMilliseconds: 0,
                                  replayRate: 100_000, ringBytes: 1 << 20),
            eventLoop: self.loop)
        let options = MQTTClient.Options(host: "127.0.0.1", port: self.broker.port, clientID: "agent",
                                         keepaliveSeconds: 10, maxInflight: 20,
                                         reconnectInitial: .milliseconds(100), reconnectMaximum: .milliseconds(400))
        self.mqtt = try MQTTClient(options: options, eventLoop: self.loop, logger: .discarding)
        self.outbox = Outbox(mqtt: self.mqtt, qos: 1, spool: self.spool, mode: mode, loop: self.loop,
                             logger: .discarding)
        var watcherOptions = options
        watcherOptions.clientID = "watcher"
        self.watcher = try MQTTClient(options: watcherOptions, eventLoop: self.loop, logger: .discarding)
        self.mqtt.onConnectionEvent = { [unowned self] event in
            switch event {
            case .connected:
                self.outbox.brokerConnected()
                self.onConnected()
            case .disconnected:
                self.outbox.brokerDisconnected()
            }
        }
        self.watcher.onMessage = { [unowned self] message in
            let text = String(decoding: Array(message.payload), as: UTF8.self)
            let seq = Int(text.dropFirst("{\"seq\":".count).dropLast()) ?? -1
            self.received.append((message.topic, seq))
            if self.received.count >= self.expected { self.loop.stop() }
        }
    }

    /// Connects the watcher and subscribes it to `t/#` before anything is published.
    func watch() throws {
        self.watcher.onConnectionEvent = { [unowned self] event in
            guard case .connected = event else { return }
            try? self.watcher.subscribe("t/#", qos: 1) { [unowned self] _ in self.loop.stop() }
        }
        try self.watcher.start()
        try self.loop.runForTest()
    }

    func key(_ stream: String) -> SpoolStreamKey? { self.spool.streamKey("dev/" + stream) }

    /// Publishes `{"seq":N}` on `t/<stream>` through the outbox, as a device publisher does.
    func send(_ stream: String, _ seqs: Range<Int>) {
        let json = JSONBuffer(capacity: 64)
        let key = self.key(stream)
        for seq in seqs {
            json.reset()
            json.append("{\"seq\":")
            json.append(integer: Int64(seq))
            json.append("}")
            ("t/" + stream).withCString { self.outbox.publish(topic: $0, key: key, payload: json) }
        }
    }

    /// Runs the loop until the watcher has `count` messages (or fails after 20 s).
    func receive(_ count: Int) throws {
        self.expected = count
        if self.received.count < count { try self.loop.runForTest() }
    }

    /// Runs the loop until the spool holds nothing unacknowledged.
    func drainAcknowledgements() throws {
        let deadline = MonotonicInstant.now.advanced(by: .seconds(10))
        while self.spool.unacknowledged > 0 && MonotonicInstant.now < deadline {
            let timer = try self.loop.scheduleTimer(after: .milliseconds(20)) { [unowned self] in self.loop.stop() }
            self.loop.run()
            self.loop.cancel(timer)
        }
    }

    /// The `seq`s received on `t/<stream>`, in arrival order.
    func seqs(_ stream: String) -> [Int] { self.received.filter { $0.topic == "t/" + stream }.map(\.seq) }

    func close() {
        self.outbox.close()
        self.mqtt.close()
        self.watcher.close()
        self.loop.close()
        self.broker.stop()
        try? FileManager.default.removeItem(atPath: self.directory)
    }
}

@Suite(.serialized) struct OutboxTests {
    @Test(arguments: [AgentConfiguration.SpoolMode.offline, .always])
    func replaysSpoolInOrderAfterBrokerOutageWithLiveRecordsBehind(mode: AgentConfiguration.SpoolMode) throws {
        let rig = try OutboxRig(mode: mode)
        defer { rig.close() }
        try rig.watch()
        // The agent's broker connection is down (not started): everything goes to the spool.
        rig.send("a", 0..<30)
        rig.send("b", 0..<5)
        #expect(rig.outbox.spooled == 35 && rig.outbox.published == 0)
        #expect(rig.spool.replayPendingCount(for: try #require(rig.key("a"))) == 30)
        // The moment it connects, live data keeps coming: a and b must queue behind their spooled records, c (no
        // backlog) goes out at once.
        rig.onConnected = {
            rig.send("a", 30..<40)
            rig.send("b", 5..<10)
            rig.send("c", 0..<10)
        }
        try rig.mqtt.start()
        try rig.receive(60)
        #expect(rig.seqs("a") == Array(0..<40))
        #expect(rig.seqs("b") == Array(0..<10))
        #expect(rig.seqs("c") == Array(0..<10))
        // a 0..<40 and b 0..<10 went through the spool; c too when replay had filled the in-flight window.
        #expect(rig.outbox.replayed >= 50)
        try rig.drainAcknowledgements()
        #expect(rig.spool.unacknowledged == 0)
        #expect(rig.outbox.dropped == 0)
    }

    @Test func offlineModePublishesLiveWithoutTheSpoolWhileConnected() throws {
        let rig = try OutboxRig(mode: .offline)
        defer { rig.close() }
        try rig.watch()
        rig.onConnected = { rig.send("a", 0..<15) }
        try rig.mqtt.start()
        try rig.receive(15)
        #expect(rig.seqs("a") == Array(0..<15))
        #expect(rig.outbox.spooled == 0 && rig.outbox.replayed == 0)
    }

    @Test func alwaysModeWritesAheadPublishesLiveAndReleasesOnPuback() throws {
        let rig = try OutboxRig(mode: .always)
        defer { rig.close() }
        try rig.watch()
        // More than the in-flight window (20) in one burst: what does not fit goes to replay, behind.
        rig.onConnected = {
            rig.send("a", 0..<10)
            rig.send("b", 0..<10)
        }
        try rig.mqtt.start()
        try rig.receive(20)
        #expect(rig.seqs("a") == Array(0..<10))
        #expect(rig.seqs("b") == Array(0..<10))
        #expect(rig.outbox.spooled == 20, "every message is written ahead")
        #expect(rig.outbox.replayed == 0, "and published live, not through the replay tick")
        #expect(rig.outbox.publishedLive == 20)
        try rig.drainAcknowledgements()
        #expect(rig.spool.unacknowledged == 0, "each PUBACK released its record")
        #expect(rig.spool.writtenBelow >= 20, "every message was in a segment file")
    }

    @Test func alwaysModeNeverPublishesAMessageThatIsNotOnDisk() throws {
        let rig = try OutboxRig(mode: .always)
        defer { rig.close() }
        try rig.watch()
        rig.onConnected = { rig.loop.stop() }
        try rig.mqtt.start()
        try rig.loop.runForTest()
        // Every segment write fails (EIO): nothing reaches the disk, so nothing may reach the broker.
        rig.spool.writer.injectedWriteError.store(EIO, ordering: .relaxed)
        rig.send("a", 0..<5)
        rig.spool.synchronize()
        rig.loop.run(forSeconds: 0.3)
        #expect(rig.received.isEmpty)
        #expect(rig.outbox.publishedLive == 0)
        #expect(rig.spool.metrics.dropped(.writeError) == 5, "lost, and counted as such")
        // The disk recovers: the next messages are written and published; the lost ones stay lost.
        rig.spool.writer.injectedWriteError.store(0, ordering: .relaxed)
        rig.send("a", 5..<10)
        try rig.receive(5)
        #expect(rig.seqs("a") == Array(5..<10))
        #expect(rig.outbox.replayed == 0)
    }

    @Test func alwaysModeBeyondTheWindowKeepsPerStreamOrder() throws {
        let rig = try OutboxRig(mode: .always)
        defer { rig.close() }
        try rig.watch()
        rig.onConnected = {
            rig.send("a", 0..<40)
            rig.send("b", 0..<40)
        }
        try rig.mqtt.start()
        try rig.receive(80)
        #expect(rig.seqs("a") == Array(0..<40))
        #expect(rig.seqs("b") == Array(0..<40))
        try rig.drainAcknowledgements()
        #expect(rig.spool.unacknowledged == 0)
        #expect(rig.outbox.dropped == 0)
    }
}
