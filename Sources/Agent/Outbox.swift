import Logging
import MQTT

/// Where formatted messages go: the broker when it can take them, otherwise the spool (when configured), otherwise
/// a counted drop. The loop never waits here.
final class Outbox {
    let mqtt: MQTTClient
    let qos: Int
    let logger: Logger
    /// Messages that the broker could not take, spooled instead (SPEC §11); `nil` until the spool is wired in.
    var spool: (any SpoolSink)?

    private(set) var published: UInt64 = 0
    private(set) var acknowledged: UInt64 = 0
    private(set) var spooled: UInt64 = 0
    private(set) var dropped: UInt64 = 0
    private(set) var oversized: UInt64 = 0

    init(mqtt: MQTTClient, qos: Int, logger: Logger) {
        self.mqtt = mqtt
        self.qos = qos
        self.logger = logger
        mqtt.onAcknowledgement = { [unowned self] _, outcome in
            if outcome.isDelivered { self.acknowledged &+= 1 }
        }
    }

    /// Publishes `payload`'s bytes on `topic`; on refusal, spools or drops (counted).
    func publish(topic: UnsafePointer<CChar>, key: StreamKind?, payload: JSONBuffer, retain: Bool) {
        guard !payload.overflowed else {
            self.oversized &+= 1
            return
        }
        do {
            try self.mqtt.publish(topic: topic, payload: payload.bytes, qos: self.qos, retain: retain)
            self.published &+= 1
        } catch {
            if let spool = self.spool, !retain, spool.append(topic: topic, payload: payload.bytes) {
                self.spooled &+= 1
            } else {
                self.dropped &+= 1
            }
        }
    }

    /// Publishes a control-plane message (status, devices, metrics, command results) from a string.
    func publish(topic: String, text: String, retain: Bool) {
        do {
            try self.mqtt.publish(topic: topic, payload: Array(text.utf8), qos: self.qos, retain: retain)
            self.published &+= 1
        } catch {
            // Control-plane messages are republished on reconnect (status, devices) or superseded (metrics).
        }
    }
}

/// The spool's face toward the agent (SPEC §11): append what the broker could not take, without blocking.
public protocol SpoolSink: AnyObject {
    /// - Returns: `false` when the message was dropped (spool full per `on_full`, or failing disk); counted there.
    func append(topic: UnsafePointer<CChar>, payload: UnsafeRawBufferPointer) -> Bool
}
