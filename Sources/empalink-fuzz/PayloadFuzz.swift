import Consumer

/// The consumers' payload reader (SPEC §17): each frame is one MQTT message of a topic the selector byte picks from
/// the contract's shapes (agent status, devices, metrics, device status, every stream, and some outside it), then
/// its payload. One `ConsumerCore` sees them all, so de-duplication, reordering and gap detection run on what the
/// payloads claim (`sid`, `seq`, `t`, `fs`); a flush closes the input. Every event it yields goes on as the tools
/// take it: into a `watch` board (rendered at the end) and, for data, into `e4-server`'s data lines.
enum PayloadFuzz {
    static let target = FuzzTarget(
        name: "payload",
        summary: "(topic selector, length, payload) MQTT messages into ConsumerCore, a watch board, e4-server lines"
    ) { bytes in
        var input = FuzzInput(bytes)
        var core = ConsumerCore(prefix: "P", window: 2.0, capacity: 16)
        var board = WatchBoard()
        var now = 0.0
        while let selector = input.byte() {
            let topic = topics[Int(selector) % topics.count]
            let payload = input.chunk()
            for event in core.receive(topic: topic, payload: payload, now: now) { Self.consume(event, &board, now) }
            now += Double(selector >> 4) / 4
        }
        for event in core.flush(now: now + 1_000) { Self.consume(event, &board, now) }
        _ = core.counters
        _ = board.render(now: now, trace: true)
    }

    static func consume(_ event: ConsumerEvent, _ board: inout WatchBoard, _ now: Double) {
        board.handle(event, now: now)
        if case .data(_, _, let message) = event {
            _ = E4DataLines.text(message)
            _ = E4DataLines.text(message, decimalComma: true)
        }
    }

    static let topics: [String] =
        ["P/board/status", "P/board/devices", "P/board/metrics", "P/board/a1b2c3/status"]
        + ConsumerStream.allCases.map { "P/board/a1b2c3/\($0.rawValue)" }
        + ["P/other/a1b2c3/bvp", "P/board/cmd", "P/fleet/x/y", "Q/board/status", "P/board/a1b2c3/acc/extra"]
}
