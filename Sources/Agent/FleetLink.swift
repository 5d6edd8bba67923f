import EventLoop
import Fleet
import MQTT

/// Fleet mode's state in the agent (SPEC §18, Docs/fleet.md "In the agent"): the coordinator, its own broker
/// connection, the tick, and what the coordinator was told about each wristband's link. Owned by the loop thread.
final class FleetLink {
    /// What the coordinator was last told of a wristband's link.
    enum Reported: Equatable {
        /// We started an attempt (its end is `.connectFailed` unless it comes up).
        case connecting(adapter: String)
        /// `.connected` was fed (its end is `.disconnected`).
        case up(adapter: String)
    }

    var coordinator: FleetCoordinator
    /// The fleet's own connection: its Last Will is this board's presence offline, which the agent's connection
    /// (whose will is `P/A/status` offline) cannot also carry.
    let mqtt: MQTTClient
    var timer: TimerHandle?
    var ticks: UInt64 = 0
    var reported: [String: Reported] = [:]
    var counters: [FleetCoordinator.Counter: UInt64] = [:]
    /// Fleet publications the client refused (not connected, in-flight window full); the coordinator repeats
    /// what matters (renewals, sightings, presence on the next connection).
    var publishFailures: UInt64 = 0
    /// Bumped at every broker connection, so that a late SUBACK of an earlier one is ignored.
    var connectionNumber: UInt64 = 0
    /// CONNACK received on the current connection.
    var connectionUp = false
    /// `.brokerConnected` fed for the current connection (its `P/fleet/#` subscription was granted).
    var sessionUp = false
    /// Events raised while actions run (a connect reporting its status at once), handled after them.
    var queue: [FleetCoordinator.Event] = []
    var handling = false
    /// `.shutdown` was handled: later events (links going down at the stop) must not publish presence again.
    var stopped = false
    var dropLog = LogRateLimit(burst: 10, window: .seconds(60))
    var publishLog = LogRateLimit(burst: 10, window: .seconds(60))

    init(coordinator: FleetCoordinator, mqtt: MQTTClient) {
        self.coordinator = coordinator
        self.mqtt = mqtt
    }

    var will: MQTTClient.Will {
        let will = self.coordinator.will
        return MQTTClient.Will(topic: will.topic, payload: will.payload, qos: 1, retain: true)
    }
}
