import EventLoop
import Logging
import MQTT
import Testing
import TestSupport

/// The client against a real `mosquitto` on loopback: QoS, acknowledgements, retained messages, properties.
@Suite struct MQTTClientTests {
    @Test(arguments: [MQTTProtocolVersion.v5, .v311])
    func deliversEveryQoSWithExactPayloadsAndOneOutcomeEach(version: MQTTProtocolVersion) throws {
        let broker = try TestBroker()
        let loop = try EventLoop()
        defer { loop.close() }
        let (logger, logs) = Logger.test()
        let subscriber = try MQTTClient(
            options: .test(broker, "sub", version: version), eventLoop: loop, logger: logger
        )
        let publisher = try MQTTClient(options: .test(broker, "pub", version: version), eventLoop: loop, logger: logger)
        defer {
            subscriber.close()
            publisher.close()
        }
        let payloads: [[UInt8]] = [
            Array(#"{"qos":0}"#.utf8),
            (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) },  // larger than one socket write
            [0, 1, 2, 0, 0xFF],  // binary with NULs
        ]
        var received: [ReceivedMessage] = []
        var outcomes: [Int: [MQTTPublishOutcome]] = [:]
        var messageIDs: Set<Int32> = []
        func stopWhenDone() {
            if received.count == 3 && outcomes.values.map(\.count).reduce(0, +) == 3 { loop.stop() }
        }
        subscriber.onMessage = { message in
            received.append(ReceivedMessage(message))
            stopWhenDone()
        }
        let subscriberEvents = EventRecorder()
        subscriberEvents.attach(to: subscriber)
        subscriberEvents.onConnect = {
            do {
                try subscriber.subscribe("test/qos/#", qos: 2) { granted in
                    #expect(granted == 2)
                    do { try publisher.start() } catch { Issue.record("start: \(error)") }
                }
            } catch {
                Issue.record("subscribe: \(error)")
            }
        }
        let publisherEvents = EventRecorder()
        publisherEvents.attach(to: publisher)
        publisherEvents.onConnect = {
            for qos in 0...2 {
                do {
                    let mid = try publisher.publish(topic: "test/qos/\(qos)", payload: payloads[qos], qos: qos) {
                        outcome in
                        outcomes[qos, default: []].append(outcome)
                        stopWhenDone()
                    }
                    messageIDs.insert(mid)
                } catch {
                    Issue.record("publish QoS \(qos): \(error)")
                }
            }
        }
        try subscriber.start()
        try loop.runForTest()
        // Let duplicates, if any, arrive before counting.
        try loop.run(for: .milliseconds(200))

        let byTopic = received.sorted { $0.topic < $1.topic }
        #expect(byTopic.map(\.topic) == ["test/qos/0", "test/qos/1", "test/qos/2"])
        #expect(byTopic.map(\.payload) == payloads)
        #expect(byTopic.map(\.qos) == [0, 1, 2])
        #expect(byTopic.allSatisfy { !$0.retain })
        #expect(outcomes[0] == [.sent])
        #expect(outcomes[1] == [.acknowledged(reasonCode: 0)])
        #expect(outcomes[2] == [.acknowledged(reasonCode: 0)])
        #expect(messageIDs.count == 3)
        #expect(publisher.inflightCount == 0)
        #expect(publisher.publishedCount == 3)
        #expect(publisher.deliveredCount == 3)
        #expect(subscriberEvents.errors.isEmpty && publisherEvents.errors.isEmpty, "\(logs.events)")
    }

    @Test func retainedMessageReachesALaterSubscriber() throws {
        let broker = try TestBroker()
        let loop = try EventLoop()
        defer { loop.close() }
        let (logger, _) = Logger.test()
        let publisher = try MQTTClient(options: .test(broker, "pub"), eventLoop: loop, logger: logger)
        let subscriber = try MQTTClient(options: .test(broker, "sub"), eventLoop: loop, logger: logger)
        defer {
            subscriber.close()
            publisher.close()
        }
        var received: [ReceivedMessage] = []
        let publisherEvents = EventRecorder()
        publisherEvents.attach(to: publisher)
        publisherEvents.onConnect = {
            do {
                try publisher.publish(topic: "empalink/a1/status", payload: Array(#"{"state":"online"}"#.utf8), qos: 1,
                                      retain: true) { outcome in
                    // 0x10 "no matching subscribers" is a success code.
                    #expect(outcome == .acknowledged(reasonCode: 0x10))
                    do { try subscriber.start() } catch { Issue.record("start: \(error)") }
                }
            } catch {
                Issue.record("publish: \(error)")
            }
        }
        let subscriberEvents = EventRecorder()
        subscriberEvents.attach(to: subscriber)
        subscriberEvents.onConnect = { try? subscriber.subscribe("empalink/a1/status", qos: 1) }
        subscriber.onMessage = { message in
            received.append(ReceivedMessage(message))
            loop.stop()
        }
        try publisher.start()
        try loop.runForTest()
        #expect(received.map(\.text) == [#"{"state":"online"}"#])
        #expect(received.first?.retain == true)
    }

    @Test(arguments: [MQTTProtocolVersion.v5, .v311])
    func contentTypeAndExpiryOnlyOnMQTT5(publisherVersion: MQTTProtocolVersion) throws {
        let broker = try TestBroker()
        let loop = try EventLoop()
        defer { loop.close() }
        let (logger, _) = Logger.test()
        let subscriber = try MQTTClient(options: .test(broker, "sub", version: .v5), eventLoop: loop, logger: logger)
        let publisher = try MQTTClient(options: .test(broker, "pub", version: publisherVersion), eventLoop: loop,
                                       logger: logger)
        defer {
            subscriber.close()
            publisher.close()
        }
        var received: [ReceivedMessage] = []
        subscriber.onMessage = { message in
            received.append(ReceivedMessage(message))
            if received.count == 2 { loop.stop() }
        }
        let subscriberEvents = EventRecorder()
        subscriberEvents.attach(to: subscriber)
        subscriberEvents.onConnect = {
            try? subscriber.subscribe("test/props/#", qos: 1) { _ in try? publisher.start() }
        }
        let publisherEvents = EventRecorder()
        publisherEvents.attach(to: publisher)
        publisherEvents.onConnect = {
            do {
                try publisher.publish(topic: "test/props/plain", payload: Array("{}".utf8), qos: 1)
                try publisher.publish(topic: "test/props/expiring", payload: Array("{}".utf8), qos: 1,
                                      messageExpirySeconds: 300)
            } catch {
                Issue.record("publish: \(error)")
            }
        }
        try subscriber.start()
        try loop.runForTest()
        let plain = received.first { $0.topic == "test/props/plain" }
        let expiring = received.first { $0.topic == "test/props/expiring" }
        switch publisherVersion {
        case .v5:
            #expect(plain?.contentType == "application/json")
            #expect(plain?.expiry == nil)
            #expect(expiring?.contentType == "application/json")
            #expect(expiring.flatMap(\.expiry).map { (1...300).contains($0) } == true)
        case .v311:
            #expect(plain != nil && plain?.contentType == nil)
            #expect(expiring != nil && expiring?.expiry == nil)
        }
    }

    @Test func inflightWindowIsRespected() throws {
        let broker = try TestBroker()
        let loop = try EventLoop()
        defer { loop.close() }
        let (logger, _) = Logger.test()
        var options = MQTTClient.Options.test(broker, "pub")
        options.maxInflight = 3
        let publisher = try MQTTClient(options: options, eventLoop: loop, logger: logger)
        defer { publisher.close() }
        var refusals: [MQTTError.Code] = []
        var inflightAtRefusal = -1
        var acknowledged = 0
        let events = EventRecorder()
        events.attach(to: publisher)
        events.onConnect = {
            // Inside libmosquitto's callback nothing is written yet, so no acknowledgement can arrive in between.
            for index in 0..<4 {
                do throws(MQTTError) {
                    try publisher.publish(topic: "test/inflight", payload: [UInt8(index)], qos: 1) { _ in
                        acknowledged += 1
                        if acknowledged == 3 { loop.stop() }
                    }
                } catch {
                    refusals.append(error.code)
                    inflightAtRefusal = publisher.inflightCount
                }
            }
        }
        try publisher.start()
        try loop.runForTest()
        #expect(refusals == [.inflightFull])
        #expect(inflightAtRefusal == 3)
        #expect(publisher.inflightCount == 0)
        // The window is free again.
        var acknowledgedLater = false
        try publisher.publish(topic: "test/inflight", payload: [9], qos: 1) { outcome in
            acknowledgedLater = outcome.isDelivered
            loop.stop()
        }
        try loop.runForTest()
        #expect(acknowledgedLater)

        // Outside libmosquitto's callbacks a QoS 0 message is written during the publish call itself: its
        // outcome still arrives once, after `publish` has returned its id.
        var qos0Outcomes: [(Int32, MQTTPublishOutcome)] = []
        var returnedID: Int32 = -1
        publisher.onAcknowledgement = { mid, outcome in qos0Outcomes.append((mid, outcome)) }
        returnedID = try publisher.publish(topic: "test/inflight", payload: [10], qos: 0)
        try loop.run(for: .milliseconds(100))
        #expect(qos0Outcomes.count == 1)
        #expect(qos0Outcomes.first?.0 == returnedID)
        #expect(qos0Outcomes.first?.1 == .sent)
        #expect(publisher.inflightCount == 0)
    }

    @Test func oversizedPayloadIsRefusedBeforeSending() throws {
        let broker = try TestBroker(settings: ["max_packet_size 2000"])
        let loop = try EventLoop()
        defer { loop.close() }
        let (logger, _) = Logger.test()
        let publisher = try MQTTClient(options: .test(broker, "pub"), eventLoop: loop, logger: logger)
        defer { publisher.close() }
        var refusal: MQTTError?
        var smallOutcome: MQTTPublishOutcome?
        let events = EventRecorder()
        events.attach(to: publisher)
        events.onConnect = {
            do throws(MQTTError) {
                try publisher.publish(topic: "test/big", payload: [UInt8](repeating: 7, count: 5000), qos: 1)
            } catch {
                refusal = error
            }
            _ = try? publisher.publish(topic: "test/small", payload: [1], qos: 1) { outcome in
                smallOutcome = outcome
                loop.stop()
            }
        }
        try publisher.start()
        try loop.runForTest()
        #expect(refusal?.code == .payloadTooLarge)
        #expect(smallOutcome == .acknowledged(reasonCode: 0x10))
        #expect(events.errors.isEmpty)
    }
}
