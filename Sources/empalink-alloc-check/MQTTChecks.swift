#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import Logging
import MQTT
import CAllocationCounter

/// The MQTT hot path: ``MQTTClient/publish(topic:payload:qos:retain:messageExpirySeconds:onAck:)`` with a
/// preformatted NUL-terminated topic and a borrowed payload, against a real `mosquitto`, through the write and,
/// for QoS 1, the PUBACK read, until the outcome reaches ``MQTTClient/onAcknowledgement``.
///
/// libmosquitto copies every message (its struct, topic, payload and packet; for MQTT 5 its properties) and
/// allocates each incoming packet; those allocations are libmosquitto's, outside our code. The case reports
/// them apart (`libmosquitto=`) from what the Swift side allocates (`ours=`), which must be 0.
enum MQTTChecks {
    static func run(iterations: Int) throws(CheckError) -> [AllocationMeasurement] {
        // Every allocation's stack is captured to attribute it; keep within the counter's stack storage.
        let iterations = min(iterations, Int(ALLOC_COUNTER_MAX_STACKS) / 16)
        let broker = try MosquittoProcess()
        var results: [AllocationMeasurement] = []
        for version in [MQTTProtocolVersion.v5, .v311] {
            for qos in [0, 1] {
                results.append(try Self.publish(broker: broker, version: version, qos: qos, iterations: iterations))
            }
        }
        return results
    }

    static func publish(broker: MosquittoProcess, version: MQTTProtocolVersion, qos: Int, iterations: Int)
        throws(CheckError) -> AllocationMeasurement
    {
        let name = "mqtt.publish.\(version == .v5 ? "v5" : "v311").qos\(qos)"
        let loop: EventLoop
        do {
            loop = try EventLoop()
        } catch {
            throw CheckError("event loop: \(error)")
        }
        defer { loop.close() }
        let options = MQTTClient.Options(host: "127.0.0.1", port: broker.port, clientID: "alloc-check-\(name)",
                                         protocolVersion: version, keepaliveSeconds: 60, maxInflight: 100)
        let client: MQTTClient
        do {
            client = try MQTTClient(options: options, eventLoop: loop, logger: .discarding)
        } catch {
            throw CheckError("MQTT client: \(error)")
        }
        defer { client.close() }
        var connected = false
        client.onConnectionEvent = { event in
            if event == .connected { connected = true }
            loop.stop()
        }
        do {
            try client.start()
            let guardTimer = try loop.scheduleTimer(after: .seconds(10)) { loop.stop() }
            loop.run()
            loop.cancel(guardTimer)
        } catch {
            throw CheckError("MQTT connect: \(error)")
        }
        guard connected else { throw CheckError("\(name): no connection to mosquitto on port \(broker.port)") }

        // What the agent holds per (device, stream): the topic formatted once, the payload in a reused buffer.
        let topic = strdup("empalink/alloc-check/9ff167/bvp")
        defer { free(topic) }
        let payload = UnsafeMutableRawBufferPointer.allocate(byteCount: 512, alignment: 8)
        defer { payload.deallocate() }
        let json = Array(#"{"sid":"3f2a","seq":0,"t":1700000000.000,"fs":64,"v":["#.utf8)
        payload.initializeMemory(as: UInt8.self, repeating: UInt8(ascii: "1"))
        payload.copyBytes(from: json)
        payload[payload.count - 1] = UInt8(ascii: "]")

        var outcomes = 0
        var failures = 0
        client.onAcknowledgement = { _, outcome in
            outcomes += 1
            if !outcome.isDelivered && outcome != .sent { failures += 1 }
            loop.stop()
        }
        let guardTimer = try? loop.scheduleTimer(after: .seconds(60)) {
            failures += 1
            loop.stop()
        }
        // Our side: 0 in release. Debug only: `earlyOutcomes.first(where:)` at MQTTClient+Publish.swift:64 (1),
        // and for QoS 1 the PUBACK's socket wake-up, `IOEvents` literals at MQTTClient+Connection.swift:105 and
        // :115 (4 each, less one shared).
        let limit = Budget.perIteration(release: 0, debug: qos == 0 ? 1 : 8, iterations)
        var measurement = AllocationMeasurement.measure(name, iterations: iterations, warmUp: 64, limit: limit,
                                                        classifyLibrary: true) {
            do throws(MQTTError) {
                guard let topic else { return }
                try client.publish(topic: topic, payload: UnsafeRawBufferPointer(payload), qos: qos)
                loop.run()
            } catch {
                failures += 1
            }
        }
        if let guardTimer { loop.cancel(guardTimer) }
        if failures > 0 || outcomes != iterations + 64 {
            measurement.failure = "\(failures) failures, \(outcomes) outcomes for \(iterations + 64) publishes"
        } else if UInt64(alloc_counter_stack_count()) < measurement.allocations {
            measurement.failure = "stack capture full: not every allocation was attributed"
        }
        return measurement
    }
}
