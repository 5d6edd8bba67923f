#if canImport(Glibc)
import Glibc
#endif
import CMosquitto

/// A message received on a subscription, lent to ``MQTTClient/onMessage`` for the duration of the call.
///
/// Noncopyable and passed `borrowing`, so the handler cannot keep it: its topic, payload and properties are
/// libmosquitto's buffers, freed when the handler returns. Copy out what must outlive the call.
public struct MQTTMessage: ~Copyable {
    /// The topic, NUL-terminated.
    public let topicPointer: UnsafePointer<CChar>
    /// The payload bytes (empty for an empty payload).
    public let payload: UnsafeRawBufferPointer
    public let qos: Int
    /// Whether the broker delivered it from its retained store.
    public let retain: Bool
    /// MQTT 5 properties (`mosquitto_property *`), `nil` for 3.1.1 or none.
    let properties: OpaquePointer?

    init(_ message: UnsafePointer<mosquitto_message>, properties: OpaquePointer?) {
        let raw = message.pointee
        self.topicPointer = UnsafePointer(raw.topic)
        self.payload = UnsafeRawBufferPointer(start: raw.payload, count: raw.payload == nil ? 0 : Int(raw.payloadlen))
        self.qos = Int(raw.qos)
        self.retain = raw.retain
        self.properties = properties
    }

    /// The topic as a `String` (allocates; compare ``topicPointer`` with `strcmp` on hot paths).
    public var topic: String { String(cString: self.topicPointer) }

    /// The MQTT 5 content-type property, or `nil`.
    public var contentType: String? {
        guard let properties = self.properties else { return nil }
        var value: UnsafeMutablePointer<CChar>?
        guard mosquitto_property_read_string(properties, Int32(MQTT_PROP_CONTENT_TYPE.rawValue), &value, false) != nil,
            let value
        else { return nil }
        defer { free(value) }
        return String(cString: value)
    }

    /// The MQTT 5 message-expiry-interval property in seconds, or `nil`.
    public var messageExpirySeconds: UInt32? {
        guard let properties = self.properties else { return nil }
        var value: UInt32 = 0
        guard mosquitto_property_read_int32(
            properties, Int32(MQTT_PROP_MESSAGE_EXPIRY_INTERVAL.rawValue), &value, false
        ) != nil else { return nil }
        return value
    }
}
