import EventLoop
import Logging
import MQTT
import Testing
import TestSupport

extension EventLoop {
    /// Runs the loop for `duration`: lets late (duplicate, unexpected) events arrive before a negative check.
    func run(for duration: Duration) throws {
        let timer = try self.scheduleTimer(after: duration) { self.stop() }
        self.run()
        self.cancel(timer)
    }
}

extension Logger {
    /// A logger that keeps everything, so a failing test can print what libmosquitto said.
    static func test() -> (Logger, MemoryLogHandler) {
        let handler = MemoryLogHandler()
        return (Logger(handler: handler, level: .debug), handler)
    }
}

extension MQTTClient.Options {
    /// Plain options for a test broker, with fast reconnects.
    static func test(_ broker: TestBroker, _ clientID: String, version: MQTTProtocolVersion = .v5) -> Self {
        MQTTClient.Options(
            host: "127.0.0.1", port: broker.port, clientID: clientID, protocolVersion: version, keepaliveSeconds: 10,
            reconnectInitial: .milliseconds(100), reconnectMaximum: .milliseconds(400)
        )
    }
}

/// A message copied out of the borrowed ``MQTTMessage``.
struct ReceivedMessage: Equatable {
    let topic: String
    let payload: [UInt8]
    let qos: Int
    let retain: Bool
    let contentType: String?
    let expiry: UInt32?

    init(_ message: borrowing MQTTMessage) {
        self.topic = message.topic
        self.payload = Array(message.payload)
        self.qos = message.qos
        self.retain = message.retain
        self.contentType = message.contentType
        self.expiry = message.messageExpirySeconds
    }

    var text: String { String(decoding: self.payload, as: UTF8.self) }
}

/// Records a client's connection events and, on every `.connected`, runs `onConnect`.
final class EventRecorder {
    var events: [MQTTConnectionEvent] = []
    var onConnect: () -> Void = {}
    var onDisconnect: (MQTTError?) -> Void = { _ in }

    func attach(to client: MQTTClient) {
        client.onConnectionEvent = { event in
            self.events.append(event)
            switch event {
            case .connected: self.onConnect()
            case .disconnected(let error, _): self.onDisconnect(error)
            }
        }
    }

    var errors: [MQTTError] {
        self.events.compactMap { event in
            if case .disconnected(let error?, _) = event { return error }
            return nil
        }
    }

    var retryDelays: [Duration] {
        self.events.compactMap { event in
            if case .disconnected(_, let delay?) = event { return delay }
            return nil
        }
    }

    var connectedCount: Int {
        self.events.filter { $0 == .connected }.count
    }
}
