@testable import Agent
import Config
import Foundation
import MQTT
import Spool
import Testing
import TestSupport

/// The agent's configuration in the option values of `MQTT` and `Spool` (SPEC §15): topics, Last Will and secret
/// files are the agent's.
@Suite struct OptionsTranslationTests {
    @Test func mqttOptionsCarryTheWillThePasswordAndTheLimits() throws {
        let directory = try makeTemporaryDirectory("options")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "s3cret pass\r\nsecond line\n".write(toFile: directory + "/pw", atomically: true, encoding: .utf8)
        let config = try configuration("""
            [agent]
            id = "a1"
            [mqtt]
            host = "127.0.0.1"
            port = 1884
            username = "edge"
            password_file = "\(directory)/pw"
            topic_prefix = "clinic"
            qos = 2
            max_inflight = 7
            reconnect_max_s = 7
            protocol = "3.1.1"
            """, directory: directory)
        let options = try MQTTClient.Options(config.mqtt, agentID: config.agent.id)
        #expect(options.password == "s3cret pass")
        #expect(options.username == "edge")
        #expect(options.will == MQTTClient.Will(topic: "clinic/a1/status", payload: Array(#"{"state":"offline"}"#.utf8),
                                                qos: 2, retain: true))
        #expect(options.maxInflight == 7)
        #expect(options.reconnectMaximum == .seconds(7))
        #expect(options.protocolVersion == .v311)
        #expect(options.clientID == "empalink-a1")
        #expect(options.tls == nil)
    }

    @Test func reconnectMaximumDefaultsToSixtySeconds() throws {
        let config = try configuration("[agent]\nid = \"a1\"\n")
        #expect(try MQTTClient.Options(config.mqtt, agentID: "a1").reconnectMaximum == .seconds(60))
    }

    @Test func unreadableOrEmptyPasswordFilesAreClearErrors() throws {
        #expect(throws: MQTTError(.configuration, "mqtt.password_file /nonexistent/empalink-password: cannot read: "
                                      + "No such file or directory")) {
            try MQTTClient.Options.readPassword("/nonexistent/empalink-password")
        }
        let directory = try makeTemporaryDirectory("options")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "\nlater\n".write(toFile: directory + "/empty", atomically: true, encoding: .utf8)
        #expect(throws: MQTTError(.configuration, "mqtt.password_file \(directory)/empty: the first line is empty")) {
            try MQTTClient.Options.readPassword(directory + "/empty")
        }
    }

    @Test(arguments: [("drop_oldest", SpoolOptions.FullPolicy.dropOldest), ("drop_newest", .dropNewest)])
    func spoolOptionsFollowTheSpoolTable(onFull: String, policy: SpoolOptions.FullPolicy) throws {
        let config = try configuration("""
            [spool]
            dir = "/srv/spool"
            mode = "always"
            max_bytes = 1048576
            segment_bytes = 65536
            fsync_interval_ms = 20
            on_full = "\(onFull)"
            replay_rate = 50
            """)
        #expect(SpoolOptions(config.spool) == SpoolOptions(
            directory: "/srv/spool", maxBytes: 1 << 20, segmentBytes: 64 << 10, fsyncIntervalMilliseconds: 20,
            onFull: policy, replayRate: 50))
    }
}
