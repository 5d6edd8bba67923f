import E4
import EmpaLink
import EventLoop

/// The whole in-process pipeline on one core: notification bytes → ``DeviceStreams/receive(_:_:arrival:into:)``
/// (decode, timestamps, IBI and heart rate) → batches → JSON, everything the agent's loop thread does per
/// notification except the syscalls (socket read, `mosquitto_publish`'s write).
///
/// Input is one wristband's traffic for an hour in arrival order — BVP 5.8, ACC 5.3, EDA 0.67, temperature
/// 0.5 notifications/s — with arrival = last sample's time + one period + 20 ms, as from `empalink-sim`.
enum PipelineBenchmark {
    struct Schedule {
        var streams: [E4Stream] = []
        var offsets: [Int] = []
        var lengths: [Int] = []
        var arrivals: [Double] = []
        var bytes: [UInt8] = []
    }

    static func schedule(seconds: Double) -> Schedule {
        let start = 1_795_961_700.0
        var schedule = Schedule()
        var pending: [(Double, E4Stream, Int)] = []
        let corpora = [E4Stream.bvp, .acc, .gsr, .temp].map { stream -> PacketCorpus in
            let perSecond = (stream.sampleRate ?? 1) / Double(stream.samplesPerPacket)
            return PacketCorpus(stream: stream, count: Int(seconds * perSecond) + 1)
        }
        for corpus in corpora {
            let fs = corpus.stream.sampleRate ?? 1
            for index in 0..<corpus.count {
                let last = Double((index + 1) * corpus.stream.samplesPerPacket - 1) / fs
                let arrival = start + last + 1 / fs + 0.020
                guard arrival < start + seconds else { break }
                pending.append((arrival, corpus.stream, index))
            }
        }
        pending.sort { $0.0 < $1.0 }
        for (arrival, stream, index) in pending {
            guard let corpus = corpora.first(where: { $0.stream == stream }) else { continue }
            schedule.streams.append(stream)
            schedule.offsets.append(schedule.bytes.count)
            schedule.lengths.append(corpus.length)
            schedule.arrivals.append(arrival)
            schedule.bytes.append(contentsOf: corpus.bytes[index * PacketCorpus.stride..<index * PacketCorpus.stride
                + corpus.length])
        }
        return schedule
    }

    static func run(seconds: Double) -> [BenchRow] {
        let schedule = Self.schedule(seconds: seconds)
        return [(0, "batch_ms 0"), (250, "batch_ms 250 (default)")].map { batchMilliseconds, label in
            _ = Self.replay(schedule, batchMilliseconds: batchMilliseconds)
            var best = Double.infinity
            var messages = 0
            for _ in 0..<5 {
                let start = MonotonicInstant.now
                messages = Self.replay(schedule, batchMilliseconds: batchMilliseconds)
                best = min(best, start.duration(to: .now).seconds)
            }
            let count = schedule.streams.count
            let perSecond = Double(count) / best
            return BenchRow(
                name: "pipeline decode → IBI → batch → JSON, one core, \(label)",
                result: "\(format(perSecond, 0)) notifications/s (\(format(best * 1e9 / Double(count), 0)) ns each, "
                    + "\(format(Double(messages) / Double(count), 2)) messages per notification)",
                key: "pipeline_notifications_per_s_batch_\(batchMilliseconds)", value: perSecond,
                unit: "notifications/s")
        }
    }

    /// Feeds the whole schedule through a fresh device; returns the number of messages formatted.
    @inline(never)
    static func replay(_ schedule: Schedule, batchMilliseconds: Int) -> Int {
        var streams = DeviceStreams()
        var sink = PublishingSink(flushEveryNotification: batchMilliseconds == 0)
        let interval = Double(batchMilliseconds) / 1000
        var nextFlush = (schedule.arrivals.first ?? 0) + interval
        schedule.bytes.withUnsafeBytes { all in
            for index in 0..<schedule.streams.count {
                let arrival = schedule.arrivals[index]
                if batchMilliseconds > 0 && arrival >= nextFlush {
                    sink.flushAll()
                    nextFlush += interval
                }
                let offset = schedule.offsets[index]
                let bytes = UnsafeRawBufferPointer(rebasing: all[offset..<offset + schedule.lengths[index]])
                streams.receive(schedule.streams[index], bytes, arrival: arrival, into: &sink)
            }
        }
        sink.flushAll()
        blackHole(sink.bytes)
        return sink.messages
    }
}
