extension MQTTClient {
    /// Everything an ``MQTTClient`` needs to connect, fixed for the client's life: plain values, so the wrapper
    /// knows nothing of any application's configuration, topics or secret files (the agent translates its own;
    /// SPEC §15).
    public struct Options: Sendable, CustomStringConvertible {
        /// Broker host name or IP literal. Resolved with `getaddrinfo` on the loop thread at every attempt:
        /// an IP literal or a name in `/etc/hosts` (`localhost`) answers at once, a DNS name can block.
        public var host: String
        public var port: Int
        public var clientID: String
        public var username: String?
        /// The password itself (the caller reads it from wherever it keeps it), never logged.
        public var password: String?
        public var protocolVersion: MQTTProtocolVersion
        /// Keepalive in seconds; libmosquitto requires at least 5.
        public var keepaliveSeconds: Int
        /// QoS ≥ 1 messages allowed to await acknowledgement; further publishes fail with
        /// ``MQTTError/Code/inflightFull``. Also given to libmosquitto (send maximum / max in-flight) so that
        /// its own queue never grows beyond it.
        public var maxInflight: Int
        /// TLS settings; `nil` for plain TCP.
        public var tls: TLS?
        /// The Last Will the broker publishes when the connection ends without DISCONNECT.
        public var will: Will?
        /// MQTT 5: the content type set on every publish (and the will); `nil` for none.
        public var contentType: String?
        /// The first reconnect delay; it doubles per failed attempt up to ``reconnectMaximum``.
        public var reconnectInitial: Duration
        public var reconnectMaximum: Duration

        public init(
            host: String = "localhost",
            port: Int = 1883,
            clientID: String,
            username: String? = nil,
            password: String? = nil,
            protocolVersion: MQTTProtocolVersion = .v5,
            keepaliveSeconds: Int = 30,
            maxInflight: Int = 100,
            tls: TLS? = nil,
            will: Will? = nil,
            contentType: String? = "application/json",
            reconnectInitial: Duration = .seconds(1),
            reconnectMaximum: Duration = .seconds(60)
        ) {
            self.host = host
            self.port = port
            self.clientID = clientID
            self.username = username
            self.password = password
            self.protocolVersion = protocolVersion
            self.keepaliveSeconds = keepaliveSeconds
            self.maxInflight = maxInflight
            self.tls = tls
            self.will = will
            self.contentType = contentType
            self.reconnectInitial = reconnectInitial
            self.reconnectMaximum = reconnectMaximum
        }

        /// The options as one line for logs; the password is never shown.
        public var description: String {
            var parts = ["\(self.host):\(self.port)", "client_id=\(self.clientID)", "protocol=\(self.protocolVersion)"]
            if let username = self.username { parts.append("username=\(username)") }
            if self.password != nil { parts.append("password=<redacted>") }
            if let tls = self.tls { parts.append(tls.insecure ? "tls=insecure" : "tls=verify") }
            if let will = self.will { parts.append("will=\(will.topic)") }
            parts.append("keepalive=\(self.keepaliveSeconds)s")
            parts.append("max_inflight=\(self.maxInflight)")
            return parts.joined(separator: " ")
        }
    }

    /// TLS settings. Certificate verification (chain and host name) is on unless ``insecure``.
    public struct TLS: Sendable, Hashable {
        /// PEM file of the CA(s) that signed the broker's certificate.
        public var caFile: String?
        /// Directory of hashed CA certificates (`c_rehash`). With neither this nor ``caFile`` the system's
        /// trust store is used.
        public var caPath: String?
        /// Client certificate (PEM) for brokers with `require_certificate`.
        public var certFile: String?
        /// The client certificate's private key (PEM, unencrypted).
        public var keyFile: String?
        /// Skips verification of the broker's certificate and host name: testing only.
        public var insecure: Bool

        public init(
            caFile: String? = nil, caPath: String? = nil, certFile: String? = nil, keyFile: String? = nil,
            insecure: Bool = false
        ) {
            self.caFile = caFile
            self.caPath = caPath
            self.certFile = certFile
            self.keyFile = keyFile
            self.insecure = insecure
        }
    }

    /// A Last Will: published by the broker when the client vanishes without DISCONNECT.
    public struct Will: Sendable, Hashable {
        public var topic: String
        public var payload: [UInt8]
        public var qos: Int
        public var retain: Bool

        public init(topic: String, payload: [UInt8], qos: Int = 1, retain: Bool = true) {
            self.topic = topic
            self.payload = payload
            self.qos = qos
            self.retain = retain
        }
    }
}
