import Config
import E4
import EmpaLink
import EventLoop
import Logging
import MQTT

/// The agent's publishing path without Bluetooth: a real ``AgentRuntime`` (event loop, MQTT client, spool and
/// outbox, built from a configuration exactly as `empalinkd` builds them) with one wristband's publisher, fed
/// notifications directly.
///
/// It exists so that `empalink-alloc-check` measures the code the daemon runs rather than a copy of it:
/// ``deliver(_:_:arrival:)`` is the path from a notification's bytes through decoding, the stream clock and the
/// IBI engine (``DeviceStreams``), the publisher's batches, JSON formatting into the shared buffer and the
/// outbox's choice of broker or spool, to `mosquitto_publish`; ``flushTick()`` is one firing of the batch timer.
/// Only the BlueZ side is left out: the notification socket read and the device manager's delegate call, which
/// the check measures on their own.
///
/// Not for production use: nothing here is needed to run the agent. Every member must be used on the thread that
/// created the probe, which owns ``eventLoop``.
public final class AgentPipelineProbe {
    /// What the outbox has done so far; differences across a measurement show that the path ran.
    public struct Counters: Sendable, Equatable {
        /// Messages handed to the MQTT client (live and replayed).
        public var published: UInt64
        /// Messages the broker acknowledged (QoS ≥ 1).
        public var acknowledged: UInt64
        /// Messages appended to the spool.
        public var spooled: UInt64
        /// Messages neither the broker nor the spool took.
        public var dropped: UInt64
        /// Messages larger than the JSON buffer, discarded.
        public var oversized: UInt64

        public init(published: UInt64, acknowledged: UInt64, spooled: UInt64, dropped: UInt64, oversized: UInt64) {
            self.published = published
            self.acknowledged = acknowledged
            self.spooled = spooled
            self.dropped = dropped
            self.oversized = oversized
        }
    }

    let runtime: AgentRuntime
    let publisher: DevicePublisher
    var streams = DeviceStreams()
    /// A heart-rate strap's decoder (SPEC §16), made by its profile as the device manager makes it.
    let heartRate = HRSDeviceProfile().makeDecoder()

    /// The agent's event loop: run it to let the MQTT client connect, write and read acknowledgements.
    public var eventLoop: EventLoop { self.runtime.loop }

    /// Called on the loop after each acknowledgement the outbox counted, e.g. to stop the loop once the
    /// messages in flight are acknowledged.
    public var onAcknowledgement: (() -> Void)?

    /// Called on the loop after the agent handled a change of the broker connection.
    public var onConnectionEvent: ((MQTTConnectionEvent) -> Void)?

    /// Builds the runtime from `configuration` and a publisher for the wristband `serial`.
    ///
    /// - Parameters:
    ///   - configuration: as `empalinkd` would load it; `mqtt`, `publish` and `spool` matter here.
    ///   - serial: the wristband's serial, for its topics and spool keys.
    ///   - logger: where the runtime logs (the spool's recovery summary, MQTT connection changes).
    /// - Throws: ``AgentError`` when the runtime cannot be built (the event loop, the MQTT options).
    public init(configuration: AgentConfiguration, serial: String, logger: Logger = .discarding)
        throws(AgentError)
    {
        let runtime = try AgentRuntime(configuration: configuration, configPath: "", logger: logger)
        self.runtime = runtime
        self.publisher = DevicePublisher(host: runtime, sink: runtime.outbox, json: runtime.json,
                                         topicBase: runtime.topicBase, serial: serial, label: "")
        runtime.publishers[serial] = self.publisher
        // The agent's own handlers, as `AgentRuntime.start()` installs them, plus a hook for the caller. Both
        // closures are made once here, not per message.
        runtime.mqtt.onConnectionEvent = { [unowned self] event in
            self.runtime.mqttEvent(event)
            self.onConnectionEvent?(event)
        }
        let outboxHandler = runtime.mqtt.onAcknowledgement
        runtime.mqtt.onAcknowledgement = { [unowned self] id, outcome in
            outboxHandler?(id, outcome)
            self.onAcknowledgement?()
        }
    }

    /// Starts connecting to the broker (asynchronously, as the agent does at start); run ``eventLoop`` until
    /// ``onConnectionEvent`` reports the connection.
    ///
    /// - Throws: ``AgentError`` when libmosquitto refuses to start (e.g. the host does not resolve).
    public func startMQTT() throws(AgentError) {
        do {
            try self.runtime.mqtt.start()
        } catch {
            throw AgentError(error.message)
        }
    }

    /// Whether the MQTT client is connected to the broker.
    public var isConnected: Bool { self.runtime.mqtt.state == .connected }

    /// Messages the MQTT client has sent and not yet seen acknowledged.
    public var inFlight: Int { self.runtime.mqtt.inflightCount }

    /// One notification of `stream` arriving at `arrival` (seconds since 1970): decoded and published as the
    /// agent does for a live wristband — at once with `batch_ms` 0, otherwise into the batches.
    ///
    /// - Parameters:
    ///   - stream: the characteristic the notification came from.
    ///   - packet: its bytes, borrowed for the call.
    ///   - arrival: when it arrived; the stream clock timestamps its samples from it (SPEC §8).
    public func deliver(_ stream: E4Stream, _ packet: UnsafeRawBufferPointer, arrival: Double) {
        var sink = self.publisher
        self.streams.receive(stream, packet, arrival: arrival, into: &sink)
    }

    /// One Heart Rate Measurement (0x2A37) of a strap arriving at `arrival`, through the hrs profile's decoder into
    /// the same publisher: `hr`, `ibi` and `contact` messages.
    public func deliverHeartRate(_ packet: UnsafeRawBufferPointer, arrival: Double) {
        var sink = self.publisher
        self.heartRate.receive(channel: 0, packet, arrival: arrival, into: &sink)
    }

    /// One firing of the batch timer (`batch_ms`) when the interval is up: every pending batch is formatted and
    /// published. (A `batch_ms` over 5 s also ticks in between, only to drain the sockets.)
    public func flushTick() {
        self.runtime.nextFlush = MonotonicInstant(nanoseconds: 0)
        self.runtime.flushTick()
    }

    /// Whether the batch tick, not the loop, reads the broker's socket now (``MQTTClient/defersReads``: batch ticks
    /// of at most 2 s running).
    public var readsBrokerAtTick: Bool { self.runtime.mqtt.defersReads }

    /// What the batch tick does first while it reads the broker's socket: reads the acknowledgements (and any
    /// command) queued there, without the loop.
    public func readBroker() {
        self.runtime.mqtt.readDeferred()
    }

    /// The outbox's counters.
    public var counters: Counters {
        let outbox = self.runtime.outbox
        return Counters(published: outbox.published, acknowledged: outbox.acknowledged, spooled: outbox.spooled,
                        dropped: outbox.dropped, oversized: outbox.oversized)
    }

    /// Stops as `empalinkd` does at exit: the outbox (and spool) first, then the MQTT client and the loop.
    public func close() {
        self.runtime.outbox.close()
        self.runtime.mqtt.close()
        self.runtime.loop.close()
    }
}
