@testable import Agent
import Config
import EventLoop
import Fleet
import Logging
@testable import MQTT
import Testing

/// Fleet mode's wiring (SPEC §18, Docs/fleet.md "In the agent"): nothing with it off; with it on, a second broker
/// connection of its own, whose will is the coordinator's presence offline.
@Suite struct FleetWiringTests {
    @Test func fleetModeOffCreatesNoFleetConnection() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        let config = try configuration("[agent]\nid = \"board-a\"\n")
        #expect(try AgentRuntime.makeFleet(config, loop: loop, logger: .discarding) == nil)
    }

    @Test func theFleetConnectionHasItsOwnClientIDProtocolAndWill() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        let config = try configuration("""
            [agent]
            id = "board-a"
            [mqtt]
            client_id = "pi-3"
            protocol = "3.1.1"
            topic_prefix = "ward"
            [[wristband]]
            serial = "a00101"
            [fleet]
            enabled = true
            """)
        let fleet = try #require(try AgentRuntime.makeFleet(config, loop: loop, logger: .discarding))
        defer { fleet.mqtt.close() }
        #expect(fleet.mqtt.options.clientID == "pi-3-fleet")
        #expect(fleet.mqtt.options.protocolVersion == .v5, "expiry and a will per connection need MQTT 5")
        let will = try #require(fleet.mqtt.options.will)
        #expect(will.topic == "ward/fleet/board/board-a")
        #expect(will.retain && will.qos == 1)
        // The will is the next session's offline presence.
        let presence = try FleetMessage.decode(topic: will.topic, payload: will.payload, prefix: "ward")
        guard case .board(let board, let offline?) = presence else {
            Issue.record("the will is not a presence: \(presence)")
            return
        }
        #expect(board == "board-a")
        #expect(!offline.online)
        #expect(offline.session == fleet.coordinator.session + 1)
        #expect(fleet.coordinator.adapters == [.init(name: "hci0", capacity: 5)])
    }

    /// After a broker restart a holder must be back, and re-assert, inside the others' 10 s grace: the fleet
    /// connection's backoff stops at 3 s even with the agent's 60 s default (CI once saw a holder back 5+ s late).
    @Test func theFleetConnectionRetriesTheBrokerWellInsideTheGrace() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        for (mqtt, maximum) in [("", 3), ("reconnect_max_s = 60\n", 3), ("reconnect_max_s = 2\n", 2)] {
            let config = try configuration("""
                [agent]
                id = "board-a"
                [mqtt]
                \(mqtt)[[wristband]]
                serial = "a00101"
                [fleet]
                enabled = true
                """)
            let fleet = try #require(try AgentRuntime.makeFleet(config, loop: loop, logger: .discarding))
            defer { fleet.mqtt.close() }
            #expect(fleet.mqtt.options.reconnectMaximum == .seconds(maximum), "\(mqtt)")
            #expect(fleet.mqtt.options.reconnectMaximum < .seconds(FleetPolicy().grace / 2))
            for failures in 0..<12 {
                #expect(fleet.mqtt.nextBackoff(failedAttempts: failures) <= .seconds(maximum))
            }
        }
    }
}
