import Consumer

/// The consumers' payload reader (SPEC §17): each frame is one MQTT message of a topic the selector byte picks from
/// the contract's shapes (agent status, devices, metrics, device status, every stream, and some outside it), then
/// its payload. One `ConsumerCore` sees them all, so de-duplication, reordering and gap detection run on what the
/// payloads claim (`sid`, `seq`, `t`, `fs`), and a flush closes the input.
enum PayloadFuzz {
    static let target = FuzzTarget(
        name: "payload",
        summary: "(topic selector, length, payload) MQTT messages into ConsumerCore.receive, then flush"
    ) { bytes in
        var input = FuzzInput(bytes)
        var core = ConsumerCore(prefix: "P", window: 2.0, capacity: 16)
        var now = 0.0
        var events = 0
        while let selector = input.byte() {
            let topic = topics[Int(selector) % topics.count]
            let payload = input.chunk()
            events += core.receive(topic: topic, payload: payload, now: now).count
            now += Double(selector >> 4) / 4
        }
        events += core.flush(now: now + 1_000).count
        _ = core.counters
        _ = events
    }

    static let topics: [String] =
        ["P/board/status", "P/board/devices", "P/board/metrics", "P/board/a1b2c3/status"]
        + ConsumerStream.allCases.map { "P/board/a1b2c3/\($0.rawValue)" }
        + ["P/other/a1b2c3/bvp", "P/board/cmd", "P/fleet/x/y", "Q/board/status", "P/board/a1b2c3/acc/extra"]
}
