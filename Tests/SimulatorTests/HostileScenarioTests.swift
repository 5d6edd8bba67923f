import Testing

@testable import Simulator

/// The `[[hostile]]` tables of a scenario (Docs/simulator.md, "Hostile bluetoothd"): every switch parsed, every
/// mistake an error with its line.
@Suite struct HostileScenarioTests {
    @Test func everySwitchIsParsed() throws {
        let scenario = try Scenario.parse("""
            [[hostile]]
            device = "3"
            wrong_types = true
            malformed_signals = 200

            [[hostile]]
            device = "a00104"
            acquire_notify_mtu = -9223372036854775808
            notify_socket = "pipe"
            oversized_notifications = 4000
            properties_flood = 2000
            vanish_s = 0.5
            owner_change_mid_call = "connect"
            stale_reply = "never"
            """)
        #expect(scenario.hostile.count == 2)
        var first = HostileBehaviour()
        first.device = "3"
        first.wrongTypes = true
        first.malformedSignalsPerSecond = 200
        #expect(scenario.hostile[0] == first)
        var second = HostileBehaviour()
        second.device = "a00104"
        second.acquireNotifyMTU = Int64.min
        second.notifySocket = .pipe
        second.oversizedNotifications = 4000
        second.propertiesFloodPerSecond = 2000
        second.vanishSeconds = 0.5
        second.ownerChangeMidCall = .connect
        second.staleReply = .never
        #expect(scenario.hostile[1] == second)
        #expect(try Scenario.parse("").hostile.isEmpty, "off unless a scenario asks")
    }

    @Test(arguments: [
        ("[[hostile]]\nnotify_socket = \"tcp\"\n", 2, "'notify_socket' must be one of seqpacket, stream, datagram, pipe"),
        ("[[hostile]]\noversized_notifications = 20\n", 2, "must be 0 (off) or 21…65000 bytes"),
        ("[[hostile]]\nvanish_s = 0.01\n", 2, "'vanish_s' must be 0 (off) or at least 0.1"),
        ("[[hostile]]\nowner_change_mid_call = \"read\"\n", 2, "'owner_change_mid_call' must be one of connect"),
        ("[[hostile]]\nstale_reply = \"soon\"\n", 2, "'stale_reply' must be one of late, never"),
        ("[[hostile]]\nwrong_types = \"yes\"\n", 2, "'wrong_types' must be true or false"),
        ("[[hostile]]\nproperties_flood = 100001\n", 2, "'properties_flood' must be in 0…100000"),
        ("\n[[hostile]]\nname_owner = true\n", 3, "unknown key 'name_owner' in [[hostile]]"),
        ("[hostile]\nwrong_types = true\n", 1, "'hostile' must be an array of tables"),
    ])
    func rejectsMistakesWithTheirLine(text: String, line: Int, message: String) {
        #expect {
            _ = try Scenario.parse(text)
        } throws: { error in
            guard let error = error as? ScenarioError else { return false }
            return error.position.line == line && error.message.contains(message)
        }
    }
}
