import Testing

@testable import Config

@Suite struct ConfigValidatorTests {
    let environment = ConfigEnvironment(hostname: "pi-ward/3", configDirectory: "/etc/empalink")

    func validate(_ text: String) throws -> AgentConfiguration {
        let document = try TOMLParser.parse(Array(text.utf8))
        return try ConfigValidator.validate(document, environment: self.environment)
    }

    func diagnostics(_ text: String) throws -> [ConfigDiagnostic] {
        let document = try TOMLParser.parse(Array(text.utf8))
        do {
            _ = try ConfigValidator.validate(document, environment: self.environment)
            Issue.record("expected errors for \(text)")
            return []
        } catch {
            return error.diagnostics
        }
    }

    @Test func emptyDocumentYieldsEveryDefault() throws {
        let config = try self.validate("")
        #expect(config.agent.id == "pi-ward-3", "host name made topic-safe")
        #expect(config.agent.logLevel == .info)
        #expect(config.bluetooth.rssiMin == -100)
        #expect(config.bluetooth.mode == .active)
        #expect(config.mqtt.port == 1883)
        #expect(config.mqtt.clientID == "empalink-pi-ward-3")
        #expect(config.mqtt.protocolVersion == .v5)
        #expect(config.mqtt.tls.enabled == false)
        #expect(config.publish.streams == ConfigSchema.streams)
        #expect(config.spool.onFull == .dropOldest)
        #expect(config.spool.maxBytes == 268_435_456)
        #expect(config.wristbands.isEmpty)
        #expect(config.auth.apiKey == nil)
        // Every schema key outside [[wristband]] has a resolved value or is documented as unset.
        for key in ConfigSchema.keys where key.section != "wristband" {
            if case .unset = key.defaultValue { continue }
            #expect(config.resolved[key.path] != nil, "no default for \(key.path)")
        }
    }

    @Test func relativePathsResolveAgainstTheConfigDirectory() throws {
        let config = try self.validate("[spool]\ndir = \"spool\"\n[mqtt]\ntls.ca_file = \"/abs/ca.pem\"\n")
        #expect(config.spool.directory == "/etc/empalink/spool")
        #expect(config.mqtt.tls.caFile == "/abs/ca.pem")
        #expect(config.mqtt.tls.enabled)
        #expect(config.mqtt.port == 8883)
    }

    @Test func wristbandsNormaliseAndDeriveSerials() throws {
        let config = try self.validate("""
            [[wristband]]
            address = "00:07:80:9f:f1:67"
            [[wristband]]
            serial = "A00102"
            label = "bed 2"
            """)
        #expect(config.wristbands == [
            .init(serial: "9ff167", address: "00:07:80:9F:F1:67", label: ""),
            .init(serial: "a00102", address: nil, label: "bed 2"),
        ])
    }

    @Test func tablesMayBeWrittenInline() throws {
        let config = try self.validate(
            "mqtt = { host = \"broker\", tls = { ca_file = \"/ca.pem\", insecure = true } }\n")
        #expect(config.mqtt.host == "broker")
        #expect(config.mqtt.tls.insecure)
    }

    @Test func unknownKeysAreErrorsWithAHint() throws {
        let found = try self.diagnostics("[bluetooth]\nrssi_mn = -80\n")
        #expect(found == [ConfigDiagnostic("unknown key \"rssi_mn\" in [bluetooth]; did you mean \"rssi_min\"?",
                                           at: SourcePosition(line: 2, column: 1))])
    }

    @Test func quotedKeysWithDotsDoNotReachNestedKeys() throws {
        let found = try self.diagnostics("[mqtt]\n\"tls.ca_file\" = \"/ca.pem\"\n")
        #expect(found.count == 1)
        #expect(found.first?.message.hasPrefix("unknown key \"tls.ca_file\"") == true)
    }

    @Test func unknownKeyFarFromAnyNameListsTheKnownOnes() throws {
        let found = try self.diagnostics("[control]\nfrobnicate = true\n")
        #expect(found.first?.message == "unknown key \"frobnicate\" in [control]; expected one of \"mqtt_commands\"")
    }

    @Test(arguments: [
        ("[mqtt]\nqos = 3\n", "mqtt.qos: 3 is out of range; expected 0 … 2"),
        ("[mqtt]\nqos = 1.0\n", "mqtt.qos: expected an integer, found a float (1.0)"),
        ("[mqtt]\nprotocol = 5\n", "mqtt.protocol: expected a string, found an integer (5)"),
        ("[mqtt]\nprotocol = \"4\"\n", "mqtt.protocol: expected \"5\" or \"3.1.1\", found \"4\""),
        ("[mqtt]\npassword_file = \"/p\"\n", "mqtt.password_file: a password needs mqtt.username"),
        ("[auth]\napi_key = \"k\"\napi_key_file = \"/k\"\n", "auth.api_key: set either api_key or api_key_file, not both"),
        ("[bluetooth]\nadapter = \"hcix\"\n", "bluetooth.adapter: \"hcix\" is not an adapter name; expected \"hci0\", \"hci1\", …"),
        ("[publish]\nstreams = [\"bvp\", \"bvp\"]\n", "publish.streams: \"bvp\" is listed twice"),
        ("[agent]\nid = \"a/b\"\n", "agent.id: \"a/b\" is not a valid id; expected 1–64 letters, digits, '.', '_' or '-'"),
        ("wristband = 3\n", "wristband: expected [[wristband]] tables, found an integer (3)"),
    ])
    func valueErrorsSayWhatWasExpected(text: String, message: String) throws {
        let found = try self.diagnostics(text)
        #expect(found.map(\.message) == [message])
    }

    @Test func diagnosticsFormatLikeACompiler() {
        let error = ConfigDiagnostic("boom", at: SourcePosition(line: 3, column: 7))
        #expect(error.formatted(path: "/etc/a.toml") == "/etc/a.toml:3:7: error: boom")
        #expect(ConfigDiagnostic("gone", at: nil).formatted(path: "x.toml") == "x.toml: error: gone")
    }

    @Test func editDistanceCountsSingleEdits() {
        #expect(ConfigValidator.editDistance("rssi_min", "rssi_min") == 0)
        #expect(ConfigValidator.editDistance("rssi_mn", "rssi_min") == 1)
        #expect(ConfigValidator.editDistance("", "abc") == 3)
        #expect(ConfigValidator.editDistance("kitten", "sitting") == 3)
    }

    @Test func jsonNestsDottedKeysAndKeepsSchemaOrder() throws {
        let config = try self.validate("[mqtt]\ntls.ca_path = \"/certs\"\ntls.insecure = true\n")
        guard case .object(let sections) = config.json else {
            Issue.record("not an object")
            return
        }
        #expect(sections.map(\.0) == ConfigSchema.sections.map(\.name))
        let text = config.json.serialized()
        #expect(text.contains("\"tls\":{\"ca_file\":null,\"ca_path\":\"/certs\",\"cert_file\":null,\"key_file\":null,\"insecure\":true}"))
    }

    @Test func insecureWithoutTLSIsAnError() throws {
        let found = try self.diagnostics("[mqtt]\ntls.insecure = true\n")
        #expect(found.map(\.position) == [SourcePosition(line: 2, column: 16)])
        #expect(found.first?.message.hasPrefix("mqtt.tls.insecure: has no effect without TLS") == true)
        #expect(try self.validate("[mqtt]\ntls.insecure = false\n").mqtt.tls.insecure == false)
    }
}
