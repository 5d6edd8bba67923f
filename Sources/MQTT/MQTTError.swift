import CMosquitto

/// A failure of the MQTT client, as one line an operator can act on.
///
/// Shaped like swift-service-lifecycle's `ServiceGroupError`: a ``Code`` to switch on and a ``message`` to log,
/// so new causes can arrive without breaking callers.
public struct MQTTError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, for code that reacts to it.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String

        private init(_ name: String) { self.name = name }

        /// The client has no broker connection now; the message was not taken. The spool keeps it.
        public static let notConnected = Code("notConnected")
        /// ``MQTTClient/Options/maxInflight`` messages already await acknowledgement; the message was not taken.
        public static let inflightFull = Code("inflightFull")
        /// The payload exceeds MQTT's limit (256 MiB) or the broker's maximum packet size.
        public static let payloadTooLarge = Code("payloadTooLarge")
        /// A topic, QoS or option the library or broker rejects.
        public static let invalidArgument = Code("invalidArgument")
        /// The broker refused the connection (CONNACK reason code in ``MQTTError/reasonCode``).
        public static let connectionRefused = Code("connectionRefused")
        /// TLS setup, handshake or certificate verification failed.
        public static let tls = Code("tls")
        /// The connection broke or could not be made (socket error, keepalive timeout, protocol error).
        public static let connectionLost = Code("connectionLost")
        /// A configured file (password, certificate) cannot be read.
        public static let configuration = Code("configuration")
        /// The client was closed.
        public static let closed = Code("closed")
        /// Any other libmosquitto return code (in ``MQTTError/reasonCode``).
        public static let library = Code("library")

        public var description: String { self.name }
    }

    /// What went wrong.
    public let code: Code
    /// One line naming the cause, e.g. "connection refused: not authorised", "TLS: certificate verify failed".
    public let message: String
    /// The libmosquitto return code or MQTT reason code behind the error, when there is one.
    public let reasonCode: Int32?

    public init(_ code: Code, _ message: String, reasonCode: Int32? = nil) {
        self.code = code
        self.message = message
        self.reasonCode = reasonCode
    }

    public var description: String { self.message }

    /// The error for a libmosquitto return code, with `mosquitto_strerror`'s text.
    ///
    /// - Parameters:
    ///   - result: a `MOSQ_ERR_*` value other than `MOSQ_ERR_SUCCESS`.
    ///   - context: what was being done, e.g. "publish"; prefixed to the message.
    static func mosquitto(_ result: CInt, _ context: String) -> MQTTError {
        let text = MQTTError.libraryText(result)
        let code: Code
        switch result {
        case CInt(MOSQ_ERR_NO_CONN.rawValue): code = .notConnected
        case CInt(MOSQ_ERR_PAYLOAD_SIZE.rawValue), CInt(MOSQ_ERR_OVERSIZE_PACKET.rawValue): code = .payloadTooLarge
        case CInt(MOSQ_ERR_INVAL.rawValue), CInt(MOSQ_ERR_MALFORMED_UTF8.rawValue),
            CInt(MOSQ_ERR_QOS_NOT_SUPPORTED.rawValue), CInt(MOSQ_ERR_NOT_SUPPORTED.rawValue):
            code = .invalidArgument
        case CInt(MOSQ_ERR_TLS.rawValue): code = .tls
        case CInt(MOSQ_ERR_CONN_LOST.rawValue), CInt(MOSQ_ERR_ERRNO.rawValue), CInt(MOSQ_ERR_KEEPALIVE.rawValue),
            CInt(MOSQ_ERR_PROTOCOL.rawValue), CInt(MOSQ_ERR_EAI.rawValue):
            code = .connectionLost
        case CInt(MOSQ_ERR_CONN_REFUSED.rawValue), CInt(MOSQ_ERR_AUTH.rawValue): code = .connectionRefused
        default: code = .library
        }
        return MQTTError(code, context.isEmpty ? text : "\(context): \(text)", reasonCode: result)
    }

    /// `mosquitto_strerror`'s text in lower case without the trailing full stop, so it reads well after a colon.
    static func libraryText(_ result: CInt) -> String {
        guard let text = mosquitto_strerror(result) else { return "libmosquitto error \(result)" }
        return MQTTError.sentenceFragment(String(cString: text))
    }

    /// "Connection Refused: not authorised." → "connection refused: not authorised".
    static func sentenceFragment(_ text: String) -> String {
        var result = Substring(text)
        while let last = result.last, last == "." || last == " " || last == "\n" {
            result = result.dropLast()
        }
        guard let first = result.first else { return "" }
        return first.lowercased() + result.dropFirst().lowercased()
    }
}
