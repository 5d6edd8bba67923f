#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import Foundation
import Logging
import MQTT
import Testing
import TestSupport

/// Connection life: will, clean disconnect, reconnect with backoff, credentials, TLS.
@Suite struct MQTTConnectionTests {
    static let offline = #"{"state":"offline"}"#

    /// A client with the agent's will, and a watcher subscribed to its status topic.
    static func willOptions(_ broker: TestBroker) -> MQTTClient.Options {
        var options = MQTTClient.Options.test(broker, "agent")
        options.will = MQTTClient.Will(topic: "empalink/a1/status", payload: Array(offline.utf8), qos: 1, retain: true)
        return options
    }

    @Test func lastWillIsPublishedWhenTheClientVanishesWithoutDisconnect() throws {
        let broker = try TestBroker()
        let loop = try EventLoop()
        defer { loop.close() }
        let (logger, _) = Logger.test()
        let agent = try MQTTClient(options: Self.willOptions(broker), eventLoop: loop, logger: logger)
        let watcher = try MQTTClient(options: .test(broker, "watcher"), eventLoop: loop, logger: logger)
        defer { watcher.close() }
        var received: [ReceivedMessage] = []
        watcher.onMessage = { message in
            received.append(ReceivedMessage(message))
            loop.stop()
        }
        let watcherEvents = EventRecorder()
        watcherEvents.attach(to: watcher)
        watcherEvents.onConnect = {
            try? watcher.subscribe("empalink/a1/status", qos: 1) { _ in try? agent.start() }
        }
        let agentEvents = EventRecorder()
        agentEvents.attach(to: agent)
        // Like kill -9: the handle goes, the socket closes, no DISCONNECT is sent.
        agentEvents.onConnect = { agent.close() }
        try watcher.start()
        try loop.runForTest()
        #expect(received.map(\.text) == [Self.offline])
        #expect(received.first?.contentType == "application/json")
        #expect(agent.state == .closed)
    }

    @Test func cleanDisconnectDoesNotPublishTheWill() throws {
        let broker = try TestBroker()
        let loop = try EventLoop()
        defer { loop.close() }
        let (logger, _) = Logger.test()
        let agent = try MQTTClient(options: Self.willOptions(broker), eventLoop: loop, logger: logger)
        defer { agent.close() }
        let agentEvents = EventRecorder()
        agentEvents.attach(to: agent)
        agentEvents.onConnect = {
            _ = try? agent.publish(topic: "empalink/a1/status", payload: Array(#"{"state":"online"}"#.utf8), qos: 1,
                                   retain: true) { _ in agent.disconnect() }
        }
        agentEvents.onDisconnect = { _ in loop.stop() }
        try agent.start()
        try loop.runForTest()
        #expect(agentEvents.events.last == .disconnected(error: nil, retryIn: nil))
        #expect(agent.state == .idle)
        // Give a (wrong) will time to be published, then read the retained status.
        try loop.run(for: .milliseconds(300))
        let watcher = try MQTTClient(options: .test(broker, "watcher"), eventLoop: loop, logger: logger)
        defer { watcher.close() }
        var received: [ReceivedMessage] = []
        watcher.onMessage = { message in
            received.append(ReceivedMessage(message))
            loop.stop()
        }
        let watcherEvents = EventRecorder()
        watcherEvents.attach(to: watcher)
        watcherEvents.onConnect = { try? watcher.subscribe("empalink/a1/status", qos: 1) }
        try watcher.start()
        try loop.runForTest()
        #expect(received.map(\.text) == [#"{"state":"online"}"#])
    }

    @Test func reconnectsWithBackoffAfterBrokerRestartAndRefusesPublishesWhileDown() throws {
        let broker = try TestBroker()
        let loop = try EventLoop()
        defer { loop.close() }
        let (logger, _) = Logger.test()
        let client = try MQTTClient(options: .test(broker, "agent"), eventLoop: loop, logger: logger)
        defer { client.close() }
        let events = EventRecorder()
        events.attach(to: client)
        events.onConnect = { loop.stop() }
        try client.start()
        try loop.runForTest()
        try client.subscribe("test/echo", qos: 1)

        broker.stop()
        var refusal: MQTTError?
        events.onDisconnect = { _ in
            guard refusal == nil else { return }
            do throws(MQTTError) {
                try client.publish(topic: "test/echo", payload: [1], qos: 1)
            } catch {
                refusal = error
            }
        }
        // Several failed attempts while the broker is down.
        try loop.run(for: .milliseconds(1200))
        #expect(refusal?.code == .notConnected)
        #expect(client.state == .waitingToReconnect || client.state == .connecting)
        let delays = events.retryDelays
        #expect(delays.count >= 3, "\(events.events)")
        #expect(delays.allSatisfy { $0 >= .milliseconds(50) && $0 <= .milliseconds(400) })
        #expect(delays.first.map { $0 <= .milliseconds(100) } == true)
        #expect(events.errors.dropFirst().allSatisfy { $0.code == .connectionLost }, "\(events.errors)")

        try broker.start()
        var echoed: [ReceivedMessage] = []
        client.onMessage = { message in
            echoed.append(ReceivedMessage(message))
            loop.stop()
        }
        // The subscription is renewed on reconnect: our own publish comes back.
        events.onConnect = { _ = try? client.publish(topic: "test/echo", payload: Array("back".utf8), qos: 1) }
        try loop.runForTest()
        #expect(events.connectedCount == 2)
        #expect(client.connectionCount == 2)
        #expect(echoed.map(\.text) == ["back"])
    }

    @Test func unacknowledgedMessagesAreResentAfterReconnectAndAcknowledgedOnce() throws {
        let broker = try TestBroker()
        let loop = try EventLoop()
        defer { loop.close() }
        let (logger, logs) = Logger.test()
        let client = try MQTTClient(options: .test(broker, "agent"), eventLoop: loop, logger: logger)
        defer { client.close() }
        let events = EventRecorder()
        events.attach(to: client)
        events.onConnect = { loop.stop() }
        try client.start()
        try loop.runForTest()

        // A frozen broker takes the bytes but never acknowledges; killed, it loses them.
        broker.send(SIGSTOP)
        var outcomes: [Int: [MQTTPublishOutcome]] = [:]
        for qos in 1...2 {
            try client.publish(topic: "test/resend", payload: [UInt8(qos)], qos: qos) { outcome in
                outcomes[qos, default: []].append(outcome)
                if outcomes.count == 2 { loop.stop() }
            }
        }
        try loop.run(for: .milliseconds(100))
        #expect(client.inflightCount == 2)
        broker.send(SIGKILL)
        try broker.start()
        try loop.runForTest()
        try loop.run(for: .milliseconds(200))
        #expect(outcomes[1]?.count == 1 && outcomes[1]?.first?.isDelivered == true, "\(logs.events.map(\.message))")
        #expect(outcomes[2]?.count == 1 && outcomes[2]?.first?.isDelivered == true)
        #expect(client.inflightCount == 0)
        #expect(events.connectedCount == 2)
    }

    @Test func lostConnectionIsReportedAndARetryScheduled() throws {
        let broker = try TestBroker()
        let loop = try EventLoop()
        defer { loop.close() }
        let (logger, logs) = Logger.test()
        var options = MQTTClient.Options.test(broker, "same-id")
        options.reconnectInitial = .seconds(30)  // stay down, so the report is not overtaken by a retry
        let first = try MQTTClient(options: options, eventLoop: loop, logger: logger)
        let second = try MQTTClient(options: options, eventLoop: loop, logger: logger)
        defer {
            first.close()
            second.close()
        }
        let firstEvents = EventRecorder()
        firstEvents.attach(to: first)
        firstEvents.onConnect = { try? second.start() }
        firstEvents.onDisconnect = { _ in loop.stop() }
        try first.start()
        try loop.runForTest()
        // mosquitto 2.0.11 closes the socket without a DISCONNECT packet; later brokers send reason 0x8E.
        let accepted = [
            "connection lost: the broker closed the connection", "disconnected by the broker: session taken over",
        ]
        #expect(firstEvents.errors.count == 1)
        #expect(firstEvents.errors.allSatisfy { accepted.contains($0.message) }, "\(logs.events.map(\.message))")
        #expect(firstEvents.retryDelays.count == 1)
        #expect(first.state == .waitingToReconnect)
    }

    @Test func unreachableBrokerIsReportedAndRetried() throws {
        let port = try freeLoopbackPort()
        let loop = try EventLoop()
        defer { loop.close() }
        let (logger, _) = Logger.test()
        let options = MQTTClient.Options(host: "127.0.0.1", port: port, clientID: "nobody",
                                         reconnectInitial: .milliseconds(50), reconnectMaximum: .milliseconds(100))
        let client = try MQTTClient(options: options, eventLoop: loop, logger: logger)
        defer { client.close() }
        let events = EventRecorder()
        events.attach(to: client)
        events.onDisconnect = { _ in
            if events.errors.count == 2 { client.disconnect() }
            if client.state == .idle { loop.stop() }
        }
        try client.start()
        try loop.runForTest()
        #expect(events.errors.map(\.message) == Array(repeating: "cannot connect: Connection refused", count: 2))
        #expect(events.events.last == .disconnected(error: nil, retryIn: nil))
    }

    @Test func passwordIsAcceptedAndAWrongOneIsRefusedClearly() throws {
        // Reading `mqtt.password_file` is the agent's business (AgentTests); the client takes the password itself.
        let directory = try makeTemporaryDirectory("passwd")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try runToCompletion(["/usr/bin/mosquitto_passwd", "-b", "-c", directory + "/passwd", "edge", "s3cret pass"])
        let broker = try TestBroker(settings: ["password_file \(directory)/passwd"], anonymous: false)
        let loop = try EventLoop()
        defer { loop.close() }
        let (logger, _) = Logger.test()

        var goodOptions = MQTTClient.Options(
            host: "127.0.0.1", port: broker.port, clientID: "empalink-a1", username: "edge", password: "s3cret pass"
        )
        goodOptions.reconnectInitial = .milliseconds(100)
        var badOptions = goodOptions
        badOptions.clientID = "intruder"
        badOptions.password = "wrong"

        for version in [MQTTProtocolVersion.v5, .v311] {
            goodOptions.protocolVersion = version
            badOptions.protocolVersion = version
            let good = try MQTTClient(options: goodOptions, eventLoop: loop, logger: logger)
            let bad = try MQTTClient(options: badOptions, eventLoop: loop, logger: logger)
            let goodEvents = EventRecorder()
            goodEvents.attach(to: good)
            let badEvents = EventRecorder()
            badEvents.attach(to: bad)
            func stopWhenBothKnown() {
                if goodEvents.connectedCount == 1 && !badEvents.errors.isEmpty { loop.stop() }
            }
            goodEvents.onConnect = stopWhenBothKnown
            badEvents.onDisconnect = { _ in stopWhenBothKnown() }
            try good.start()
            try bad.start()
            try loop.runForTest()
            #expect(goodEvents.errors.isEmpty)
            #expect(badEvents.connectedCount == 0)
            let refusal = badEvents.errors.first
            #expect(refusal?.code == .connectionRefused)
            switch version {
            case .v5: #expect(refusal?.message == "connection refused: not authorized", "\(version)")
            case .v311: #expect(refusal?.message == "connection refused: not authorised", "\(version)")
            }
            // Closing reports a last event; it must not stop the next iteration's loop before it starts.
            good.onConnectionEvent = nil
            bad.onConnectionEvent = nil
            good.close()
            bad.close()
        }
    }

    @Test func optionsDescriptionNeverShowsThePassword() {
        let options = MQTTClient.Options(clientID: "edge-a1", username: "edge", password: "hunter2")
        #expect(!options.description.contains("hunter2"))
        #expect(options.description.contains("password=<redacted>"))
        #expect(options.description.contains("username=edge"))
    }

    static func tlsBroker(_ certificates: TestCertificates) throws -> TestBroker {
        try TestBroker(settings: [
            "cafile \(certificates.caFile)",
            "certfile \(certificates.serverCert)",
            "keyfile \(certificates.serverKey)",
            "require_certificate true",
        ])
    }

    @Test func tlsWithClientCertificateConnectsAndAWrongCAIsRefusedClearly() throws {
        let certificates = try TestCertificates.shared.get()
        let broker = try Self.tlsBroker(certificates)
        let loop = try EventLoop()
        defer { loop.close() }
        let (logger, logs) = Logger.test()
        var goodOptions = MQTTClient.Options.test(broker, "tls-good")
        goodOptions.tls = MQTTClient.TLS(caFile: certificates.caFile, certFile: certificates.clientCert,
                                         keyFile: certificates.clientKey)
        var badOptions = goodOptions
        badOptions.clientID = "tls-bad"
        badOptions.tls?.caFile = certificates.otherCAFile
        let good = try MQTTClient(options: goodOptions, eventLoop: loop, logger: logger)
        // At `info` the library log is only on while connecting: OpenSSL's reason must still come through.
        let quietLogger = Logger(handler: MemoryLogHandler(), level: .info)
        let bad = try MQTTClient(options: badOptions, eventLoop: loop, logger: quietLogger)
        defer {
            good.close()
            bad.close()
        }
        var outcome: MQTTPublishOutcome?
        let goodEvents = EventRecorder()
        goodEvents.attach(to: good)
        let badEvents = EventRecorder()
        badEvents.attach(to: bad)
        func stopWhenBothKnown() {
            if outcome != nil && !badEvents.errors.isEmpty { loop.stop() }
        }
        goodEvents.onConnect = {
            _ = try? good.publish(topic: "test/tls", payload: Array("{}".utf8), qos: 1) { result in
                outcome = result
                stopWhenBothKnown()
            }
        }
        badEvents.onDisconnect = { _ in stopWhenBothKnown() }
        try good.start()
        try bad.start()
        try loop.runForTest()
        #expect(goodEvents.errors.isEmpty, "\(goodEvents.errors) \(logs.events.map(\.message)) \(broker.log)")
        #expect(outcome?.isDelivered == true)
        #expect(badEvents.connectedCount == 0)
        #expect(badEvents.errors.first?.code == .tls)
        #expect(badEvents.errors.first?.message == "TLS: certificate verify failed", "\(logs.events.map(\.message))")
    }

    @Test func tlsWithoutClientCertificateIsRefusedByTheBroker() throws {
        let certificates = try TestCertificates.shared.get()
        let broker = try Self.tlsBroker(certificates)
        let loop = try EventLoop()
        defer { loop.close() }
        let (logger, _) = Logger.test()
        var options = MQTTClient.Options.test(broker, "tls-anonymous")
        options.tls = MQTTClient.TLS(caFile: certificates.caFile)
        let client = try MQTTClient(options: options, eventLoop: loop, logger: logger)
        defer { client.close() }
        let events = EventRecorder()
        events.attach(to: client)
        events.onDisconnect = { _ in loop.stop() }
        try client.start()
        try loop.runForTest()
        #expect(events.connectedCount == 0)
        #expect(events.errors.count == 1)
    }

    @Test func unreadableCertificateFileIsAClearError() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        var options = MQTTClient.Options(clientID: "x")
        options.tls = MQTTClient.TLS(caFile: "/nonexistent/ca.crt")
        #expect {
            _ = try MQTTClient(options: options, eventLoop: loop, logger: Logger.test().0)
        } throws: { error in
            (error as? MQTTError)?.message
                == "TLS: mqtt.tls.ca_file /nonexistent/ca.crt: cannot read: No such file or directory"
        }
    }
}
