import Testing

@testable import Config

/// `[fleet]` (SPEC §18): off by default; in fleet mode the board id (`agent.id`) must not be `fleet`.
@Suite struct FleetConfigTests {
    let environment = ConfigEnvironment(hostname: "pi-ward/3", configDirectory: "/etc/empalink")

    func validate(_ text: String, hostname: String = "pi-ward/3") throws -> AgentConfiguration {
        let document = try TOMLParser.parse(Array(text.utf8))
        return try ConfigValidator.validate(document, environment: ConfigEnvironment(
            hostname: hostname, configDirectory: "/etc/empalink"))
    }

    func errors(_ text: String, hostname: String = "pi-ward/3") throws -> [ConfigDiagnostic] {
        do {
            _ = try self.validate(text, hostname: hostname)
            Issue.record("expected errors for \(text)")
            return []
        } catch let error as ConfigErrors {
            return error.diagnostics
        }
    }

    @Test func fleetModeIsOffByDefault() throws {
        let config = try self.validate("")
        #expect(config.fleet.enabled == false)
        #expect(config.resolved["fleet.enabled"] == .boolean(false))
    }

    @Test func fleetModeIsTurnedOnWithEnabled() throws {
        let config = try self.validate("[agent]\nid = \"board-a\"\n[fleet]\nenabled = true\n")
        #expect(config.fleet.enabled)
        #expect(config.agent.id == "board-a")
    }

    @Test func enabledMustBeABoolean() throws {
        let found = try self.errors("[fleet]\nenabled = \"yes\"\n")
        #expect(found.count == 1)
        #expect(found.first?.message.hasPrefix("fleet.enabled") == true)
    }

    @Test func unknownFleetKeysAreErrors() throws {
        let found = try self.errors("[fleet]\nenable = true\n")
        #expect(found.count == 1)
        #expect(found.first?.message.contains("enabled") == true, "a hint names the key")
    }

    @Test func aBoardCannotBeCalledFleet() throws {
        let found = try self.errors("[agent]\nid = \"fleet\"\n\n[fleet]\nenabled = true\n")
        #expect(found.count == 1)
        #expect(found.first?.message.hasPrefix("agent.id: \"fleet\" cannot name a board in fleet mode") == true)
        #expect(found.first?.position == SourcePosition(line: 2, column: 6))
        // One line, as every diagnostic.
        #expect(found.first?.message.contains("\n") == false)
    }

    @Test func aHostNamedFleetIsRefusedAtTheFleetKey() throws {
        let found = try self.errors("[fleet]\nenabled = true\n", hostname: "fleet")
        #expect(found.count == 1)
        #expect(found.first?.position == SourcePosition(line: 2, column: 11))
    }

    @Test func fleetIsAnOrdinaryAgentIDWithFleetModeOff() throws {
        #expect(try self.validate("[agent]\nid = \"fleet\"\n").agent.id == "fleet")
        #expect(try self.validate("[agent]\nid = \"fleet\"\n[fleet]\nenabled = false\n").fleet.enabled == false)
    }

    @Test func aBoardIDThatIsNotAnIdentifierIsRefused() throws {
        let found = try self.errors("[agent]\nid = \"ward/3\"\n[fleet]\nenabled = true\n")
        #expect(found.first?.message.hasPrefix("agent.id") == true)
    }
}
