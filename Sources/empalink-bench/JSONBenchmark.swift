import EventLoop

/// JSON batch encoding (SPEC §10): one message formatted into the preallocated ``JSONBuffer``, for the batch
/// sizes the agent produces at `batch_ms` 0 (one notification), 250 (the default) and 1000.
enum JSONBenchmark {
    static func run(messages: Int) -> [BenchRow] {
        [
            Self.sampled(label: "bvp, 11 samples (batch_ms 0)", key: "bvp_11", samples: 11, messages: messages),
            Self.sampled(label: "bvp, 16 samples (batch_ms 250)", key: "bvp_16", samples: 16, messages: messages),
            Self.sampled(label: "bvp, 64 samples (batch_ms 1000)", key: "bvp_64", samples: 64, messages: messages),
            Self.acceleration(label: "acc, 8 × 3 samples (batch_ms 250)", key: "acc_8", samples: 8,
                              messages: messages),
        ]
    }

    static func sampled(label: String, key: String, samples: Int, messages: Int) -> BenchRow {
        let sink = PublishingSink(flushEveryNotification: false)
        let fill = {
            sink.bvp.t0 = 1_795_961_731.305037
            for index in 0..<samples { sink.bvp.push(Float(index % 17) * 12.34567 - 80, at: 0) }
        }
        return Self.measure(label: label, key: key, messages: messages, sink: sink, fill: fill) {
            sink.flushSampled(sink.bvp)
        }
    }

    static func acceleration(label: String, key: String, samples: Int, messages: Int) -> BenchRow {
        let sink = PublishingSink(flushEveryNotification: false)
        let fill = {
            sink.acc.t0 = 1_795_961_731.305037
            for index in 0..<samples {
                sink.acc.push(Float(index % 5 - 2), at: 0)
                sink.acc.push(-3, at: 0)
                sink.acc.push(62, at: 0)
            }
        }
        return Self.measure(label: label, key: key, messages: messages, sink: sink, fill: fill) {
            sink.flushAcceleration()
        }
    }

    /// Times `flush` alone: the batch is refilled before each message with the clock stopped in between would
    /// cost two clock reads per message, so the refill is timed separately and subtracted.
    static func measure(label: String, key: String, messages: Int, sink: PublishingSink, fill: () -> Void,
                        flush: () -> Void) -> BenchRow {
        fill()
        flush()
        let size = sink.json.count
        var best = Double.infinity
        for _ in 0..<5 {
            let start = MonotonicInstant.now
            for _ in 0..<messages {
                fill()
                flush()
            }
            let total = start.duration(to: .now).seconds
            let fillStart = MonotonicInstant.now
            for _ in 0..<messages {
                fill()
                sink.bvp.count = 0
                sink.acc.count = 0
            }
            let fillOnly = fillStart.duration(to: .now).seconds
            best = min(best, max(total - fillOnly, 0))
        }
        blackHole(sink.bytes)
        let nanoseconds = best * 1e9 / Double(messages)
        let megabytes = Double(size) * Double(messages) / best / 1e6
        return BenchRow(name: "JSON batch: \(label), \(size) bytes",
                        result: "\(format(nanoseconds, 0)) ns/message (\(format(megabytes, 0)) MB/s)",
                        key: "json_ns_\(key)", value: nanoseconds, unit: "ns/message")
    }
}
