#if canImport(Glibc)
import Glibc
#endif
import CMosquitto

extension MQTTClient {
    /// Applies ``Options`` to a fresh handle: protocol, limits, credentials, TLS, will, publish properties.
    func configure(_ handle: OpaquePointer) throws(MQTTError) {
        let options = self.options
        try check(mosquitto_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, options.protocolVersion.mosquittoValue),
                  "protocol version")
        let window = CInt(min(max(options.maxInflight, 1), 65_535))
        switch options.protocolVersion {
        case .v5: try check(mosquitto_int_option(handle, MOSQ_OPT_SEND_MAXIMUM, window), "max_inflight")
        case .v311: try check(mosquitto_max_inflight_messages_set(handle, UInt32(window)), "max_inflight")
        }
        _ = mosquitto_int_option(handle, MOSQ_OPT_TCP_NODELAY, 1)
        guard (5...65_535).contains(options.keepaliveSeconds) else {
            throw MQTTError(.invalidArgument, "keepalive \(options.keepaliveSeconds) s is outside 5...65535")
        }
        guard (1...65_535).contains(options.port) else {
            throw MQTTError(.invalidArgument, "port \(options.port) is outside 1...65535")
        }
        if let username = options.username {
            try check(mosquitto_username_pw_set(handle, username, options.password), "username")
        }
        if let tls = options.tls {
            try self.configureTLS(handle, tls)
        }
        if let will = options.will {
            try self.configureWill(handle, will)
        }
        if options.protocolVersion == .v5, let contentType = options.contentType {
            try check(
                mosquitto_property_add_string(
                    &self.publishProperties, Int32(MQTT_PROP_CONTENT_TYPE.rawValue), contentType
                ),
                "content type"
            )
        }
    }

    /// TLS with verification of chain and host name unless `insecure`; the trust store when no CA is given.
    private func configureTLS(_ handle: OpaquePointer, _ tls: TLS) throws(MQTTError) {
        if tls.caFile == nil && tls.caPath == nil {
            _ = mosquitto_int_option(handle, MOSQ_OPT_TLS_USE_OS_CERTS, 1)
        }
        let files = [("tls.ca_file", tls.caFile), ("tls.cert_file", tls.certFile), ("tls.key_file", tls.keyFile)]
        for (key, path) in files {
            if let path, access(path, R_OK) != 0 {
                throw MQTTError(.tls, "TLS: mqtt.\(key) \(path): cannot read: \(String(cString: strerror(errno)))")
            }
        }
        if (tls.certFile == nil) != (tls.keyFile == nil) {
            throw MQTTError(.tls, "TLS: mqtt.tls.cert_file and mqtt.tls.key_file must be given together")
        }
        let result = mosquitto_tls_set(handle, tls.caFile, tls.caPath, tls.certFile, tls.keyFile, nil)
        if result != MOSQ_ERR_SUCCESS.rawValue {
            throw MQTTError(.tls, "TLS: cannot use the configured files: \(MQTTError.libraryText(result))",
                            reasonCode: result)
        }
        // SSL_VERIFY_PEER (1) unless insecure; the host-name check follows the same switch.
        try check(mosquitto_tls_opts_set(handle, tls.insecure ? 0 : 1, nil, nil), "TLS options")
        try check(mosquitto_tls_insecure_set(handle, tls.insecure), "TLS options")
    }

    /// The Last Will; on MQTT 5 with the content type, like every other message.
    func configureWill(_ handle: OpaquePointer, _ will: Will) throws(MQTTError) {
        var properties: OpaquePointer?
        if self.options.protocolVersion == .v5, let contentType = self.options.contentType {
            try check(
                mosquitto_property_add_string(&properties, Int32(MQTT_PROP_CONTENT_TYPE.rawValue), contentType),
                "will properties"
            )
        }
        let result = will.payload.withUnsafeBytes { bytes in
            mosquitto_will_set_v5(
                handle, will.topic, CInt(bytes.count), bytes.baseAddress, CInt(will.qos), will.retain, properties
            )
        }
        if result != MOSQ_ERR_SUCCESS.rawValue {
            // On success libmosquitto owns the list; on failure it is still ours.
            mosquitto_property_free_all(&properties)
            throw MQTTError.mosquitto(result, "will on \(will.topic)")
        }
    }
}

/// Throws the libmosquitto error for a failed configuration call.
func check(_ result: CInt, _ context: String) throws(MQTTError) {
    guard result == MOSQ_ERR_SUCCESS.rawValue else { throw MQTTError.mosquitto(result, context) }
}
