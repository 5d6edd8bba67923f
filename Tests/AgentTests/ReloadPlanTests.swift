@testable import Agent
import Config
import Foundation
import Testing

/// SIGHUP's decision (SPEC §4): whitelist, publish and mode apply live; everything else waits for a restart.
@Suite struct ReloadPlanTests {
    static let base = """
        [agent]
        id = "ward-3"
        [auth]
        api_key = "k1"
        keyring = "/etc/empalink/keyring.toml"
        [bluetooth]
        mode = "active"
        adapter = "hci0"
        [[wristband]]
        serial = "9ff167"
        label = "bed 4"
        [mqtt]
        host = "broker-a"
        [publish]
        batch_ms = 250
        [spool]
        dir = "/var/lib/empalink/spool"
        """

    static func plan(_ edit: (String) -> String) throws -> (ReloadPlan, AgentConfiguration, AgentConfiguration) {
        let old = try configuration(Self.base)
        let new = try configuration(edit(Self.base))
        return (ReloadPlan(running: old, loaded: new), old, new)
    }

    @Test func anUnchangedFileChangesNothing() throws {
        let (plan, old, _) = try Self.plan { $0 }
        #expect(plan.applied == old)
        #expect(plan.restartNeeded.isEmpty)
        #expect(!plan.modeChanged && !plan.streamsChanged && !plan.wristbandsChanged)
    }

    @Test func whitelistAndPublishApplyLive() throws {
        let (plan, _, new) = try Self.plan {
            $0.replacingOccurrences(of: "label = \"bed 4\"", with: "label = \"bed 5\"\n[[wristband]]\nserial = \"a00101\"")
                .replacingOccurrences(of: "batch_ms = 250", with: "batch_ms = 0\nstreams = [\"hr\", \"ibi\"]")
        }
        #expect(plan.restartNeeded.isEmpty)
        #expect(plan.applied.wristbands == new.wristbands)
        #expect(plan.applied.wristbands.map(\.serial) == ["9ff167", "a00101"])
        #expect(plan.applied.publish.batchMilliseconds == 0)
        #expect(plan.wristbandsChanged && plan.streamsChanged && !plan.modeChanged)
        #expect(plan.enabledStreams == [.hr, .ibi])
    }

    @Test func modeAppliesLiveButTheRestOfBluetoothWaits() throws {
        let (plan, old, _) = try Self.plan {
            $0.replacingOccurrences(of: "mode = \"active\"", with: "mode = \"background\"")
                .replacingOccurrences(of: "adapter = \"hci0\"", with: "adapter = \"hci1\"")
        }
        #expect(plan.modeChanged)
        #expect(plan.applied.bluetooth.mode == .background)
        #expect(plan.applied.bluetooth.adapter == old.bluetooth.adapter)
        #expect(plan.restartNeeded == ["[bluetooth] (except mode)"])
    }

    @Test func onlyTheModeIsNoRestart() throws {
        let (plan, _, _) = try Self.plan { $0.replacingOccurrences(of: "mode = \"active\"", with: "mode = \"background\"") }
        #expect(plan.restartNeeded.isEmpty)
        #expect(plan.modeChanged)
    }

    @Test func mqttAgentSpoolAndControlWaitForARestartAndKeepRunningValues() throws {
        let (plan, old, _) = try Self.plan {
            $0.replacingOccurrences(of: "host = \"broker-a\"", with: "host = \"broker-b\"")
                .replacingOccurrences(of: "id = \"ward-3\"", with: "id = \"ward-4\"")
                .replacingOccurrences(of: "dir = \"/var/lib/empalink/spool\"", with: "dir = \"/srv/spool\"")
                + "\n[control]\nmqtt_commands = true\n"
        }
        #expect(plan.restartNeeded == ["[mqtt]", "[agent]", "[spool]", "[control]"])
        #expect(plan.applied.mqtt == old.mqtt)
        #expect(plan.applied.agent == old.agent)
        #expect(plan.applied.spool == old.spool)
        #expect(plan.applied.control == old.control)
    }

    @Test func theAPIKeyAppliesLiveUnlessTheKeyringMoved() throws {
        let (keyOnly, _, new) = try Self.plan { $0.replacingOccurrences(of: "api_key = \"k1\"", with: "api_key = \"k2\"") }
        #expect(keyOnly.applied.auth == new.auth)
        #expect(keyOnly.restartNeeded.isEmpty)
        let (moved, old, _) = try Self.plan {
            $0.replacingOccurrences(of: "api_key = \"k1\"", with: "api_key = \"k2\"")
                .replacingOccurrences(of: "/etc/empalink/keyring.toml", with: "/etc/empalink/other.toml")
        }
        #expect(moved.applied.auth == old.auth, "the whole [auth] waits when the keyring path changed")
        #expect(moved.restartNeeded == ["auth.keyring"])
    }

    @Test func turningFleetModeOnOrOffWaitsForARestart() throws {
        let (plan, old, _) = try Self.plan { $0 + "\n[fleet]\nenabled = true\n" }
        #expect(plan.restartNeeded == ["[fleet]"])
        #expect(plan.applied.fleet == old.fleet)
        let on = try configuration(Self.base + "\n[fleet]\nenabled = true\n")
        let off = ReloadPlan(running: on, loaded: try configuration(Self.base))
        #expect(off.restartNeeded == ["[fleet]"])
        #expect(off.applied.fleet.enabled)
    }

    @Test func inFleetModeANewWhitelistNamesWhatWaitsForARestart() throws {
        let on = try configuration(Self.base + "\n[fleet]\nenabled = true\n")
        let added = try configuration(Self.base.replacingOccurrences(of: "label = \"bed 4\"",
                                                                      with: "label = \"bed 4\"\n[[wristband]]\nserial = \"9ff168\"")
                                          + "\n[fleet]\nenabled = true\n")
        let plan = ReloadPlan(running: on, loaded: added)
        #expect(plan.wristbandsChanged)
        #expect(plan.restartNeeded.count == 1 && plan.restartNeeded[0].hasPrefix("the fleet's wristbands"))
        // A relabel is not a new wristband.
        let relabelled = try configuration(Self.base.replacingOccurrences(of: "bed 4", with: "bed 5")
                                               + "\n[fleet]\nenabled = true\n")
        #expect(ReloadPlan(running: on, loaded: relabelled).restartNeeded.isEmpty)
    }
}
