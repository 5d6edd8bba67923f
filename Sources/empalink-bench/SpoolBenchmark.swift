#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import Posix
import Spool

/// Spool benchmarks (SPEC §14): append and replay rates, fsyncs per second, bytes written per payload byte.
///
/// Records look like the agent's: a 200-byte JSON batch on `empalink/pi-01/9ff167/bvp` under the key
/// `9ff167/bvp`. The directory is `$SPOOL_BENCH_DIR` or a fresh one under /var/tmp (a real disk, not tmpfs).
enum SpoolBenchmark {
    static let topic = Array("empalink/pi-01/9ff167/bvp".utf8)
    static let message: [UInt8] = {
        var text = Array("{\"sid\":\"3f2a9c\",\"seq\":1234,\"t\":1764400000.250,\"fs\":64,\"v\":[".utf8)
        while text.count < 198 { text += Array("-12.5,".utf8) }
        return Array(text.prefix(198)) + Array("]}".utf8)
    }()

    static func run() -> [(String, String)] {
        var rows: [(String, String)] = []
        let base = Self.directory()
        defer { Self.removeTree(base) }
        do throws(SpoolError) {
            rows.append(try Self.appendBursts(directory: base + "/bursts"))
            rows.append(contentsOf: try Self.sustainedAppend(directory: base + "/sustained", seconds: 3))
            rows.append(try Self.trickle(directory: base + "/always", seconds: 10, perSecond: 40, acknowledge: true))
            rows.append(try Self.trickle(directory: base + "/outage", seconds: 10, perSecond: 40, acknowledge: false))
            rows.append(contentsOf: try Self.recoveryAndReplay(directory: base + "/replay", records: 300_000))
        } catch {
            rows.append(("spool", "failed: \(error)"))
        }
        return rows
    }

    static func options(_ directory: String) -> SpoolOptions {
        SpoolOptions(directory: directory)  // every default: fsync_interval_ms 1000, 4 MiB segments, 256 MiB
    }

    /// The event-loop side alone: bursts that fit the ring, so the writer never holds the loop back.
    static func appendBursts(directory: String) throws(SpoolError) -> (String, String) {
        let loop = Self.makeLoop()
        let spool = try Spool(options: Self.options(directory), eventLoop: loop)
        guard let key = spool.streamKey("9ff167/bvp") else { return ("append", "no key") }
        let burst = 10_000
        var elapsed = Duration.zero
        var appended = 0
        Self.topic.withUnsafeBytes { topic in
            Self.message.withUnsafeBytes { message in
                for _ in 0..<20 {
                    let start = MonotonicInstant.now
                    for _ in 0..<burst {
                        if case .appended(let id) = spool.append(key: key, topic: topic, message: message) {
                            appended += 1
                            spool.acknowledge(id)
                        }
                    }
                    elapsed += start.duration(to: .now)
                    spool.synchronize()
                }
            }
        }
        spool.close()
        loop.close()
        let perSecond = Double(appended) / elapsed.seconds
        return ("spool append + acknowledge, loop thread only (bursts of 10 000)",
                "\(format(perSecond, 0)) records/s (\(format(elapsed.seconds * 1e9 / Double(appended), 0)) ns each)")
    }

    /// Full speed through the writer thread for `seconds`, default settings, each record acknowledged at once
    /// (`always` mode with an instant broker). The loop never waits: when the ring is full it yields and retries,
    /// and the retries are reported.
    static func sustainedAppend(directory: String, seconds: Double) throws(SpoolError) -> [(String, String)] {
        let loop = Self.makeLoop()
        let spool = try Spool(options: Self.options(directory), eventLoop: loop)
        guard let key = spool.streamKey("9ff167/bvp") else { return [("sustained append", "no key")] }
        let driver = AppendDriver(spool: spool, key: key, loop: loop, seconds: seconds)
        loop.execute { driver.step() }
        loop.run()
        spool.synchronize()
        let drained = driver.start.duration(to: .now).seconds
        let metrics = spool.metrics
        spool.close()
        loop.close()
        let payload = Double(driver.appended * Self.message.count)
        return [
            ("spool sustained append, default settings (\(format(seconds, 0)) s, written and committed)",
             "\(format(Double(driver.appended) / drained, 0)) records/s, "
                + "\(format(Double(metrics.bytesWritten) / drained / 1e6, 1)) MB/s, "
                + "\(driver.ringFullRetries) ring-full retries"),
            ("spool fsync calls / group commits per second at full speed",
             "\(format(Double(metrics.fsyncs) / drained, 1)) fsyncs/s, \(format(Double(metrics.commits) / drained, 1))"
                + " commits/s (segment rolls add one fsync each)"),
            ("spool bytes written per payload byte (200-byte message)",
             "\(format(Double(metrics.bytesWritten) / payload, 3)) (framing + key + topic)"),
        ]
    }

    /// A realistic load: `perSecond` messages (5 wristbands' batches) for `seconds`, either acknowledged at once
    /// (`always` mode, healthy broker) or not at all (a broker outage: everything waits in the spool).
    static func trickle(
        directory: String, seconds: Int, perSecond: Int, acknowledge: Bool
    ) throws(SpoolError) -> (String, String) {
        let loop = Self.makeLoop()
        let spool = try Spool(options: Self.options(directory), eventLoop: loop)
        guard let key = spool.streamKey("9ff167/bvp") else { return ("trickle", "no key") }
        let start = MonotonicInstant.now
        var sent = 0
        let interval = Duration.nanoseconds(1_000_000_000 / Int64(perSecond))
        do throws(Errno) {
            try loop.scheduleTimer(after: interval, repeating: interval) {
                let result = Self.topic.withUnsafeBytes { topic in
                    Self.message.withUnsafeBytes { spool.append(key: key, topic: topic, message: $0) }
                }
                if acknowledge, case .appended(let id) = result { spool.acknowledge(id) }
                sent += 1
                if sent >= seconds * perSecond { loop.stop() }
            }
        } catch {
            return ("trickle", "timer: \(error)")
        }
        loop.run()
        let elapsed = start.duration(to: .now).seconds
        let metrics = spool.metrics
        spool.close()
        loop.close()
        let scenario = acknowledge ? "always mode, broker acknowledging" : "broker outage, nothing acknowledged"
        return ("spool fsyncs/s at \(perSecond) messages/s, defaults, \(scenario) (\(seconds) s)",
                "\(format(Double(metrics.fsyncs) / elapsed, 2)) fsyncs/s "
                    + "(\(format(Double(metrics.commits) / elapsed, 2)) data commits/s)")
    }

    /// Writes `records`, reopens (recovery checks every CRC), then replays everything at an unlimited rate.
    static func recoveryAndReplay(directory: String, records: Int) throws(SpoolError) -> [(String, String)] {
        let loop = Self.makeLoop()
        var options = Self.options(directory)
        options.replayRate = 100_000_000
        let writer = try Spool(options: options, eventLoop: loop)
        guard let key = writer.streamKey("9ff167/bvp") else { return [("replay", "no key")] }
        Self.topic.withUnsafeBytes { topic in
            Self.message.withUnsafeBytes { message in
                for index in 0..<records {
                    writer.append(key: key, topic: topic, message: message)
                    if index % 10_000 == 9_999 { writer.synchronize() }
                }
            }
        }
        writer.close()
        let recoveryStart = MonotonicInstant.now
        let spool = try Spool(options: options, eventLoop: loop)
        let recoverySeconds = recoveryStart.duration(to: .now).seconds
        let found = spool.recovery.records
        // As the agent would: pull whenever the read-ahead delivers, acknowledge at once (an instant broker).
        let start = MonotonicInstant.now
        var replayed = 0
        let drain = {
            let batch = spool.nextForReplay(limit: 100_000)
            for record in batch { spool.acknowledge(record.id) }
            replayed += batch.count
            if spool.pendingReplayCount == 0 { loop.stop() }
        }
        spool.onReplayReady = drain
        let watchdog = try? loop.scheduleTimer(after: .seconds(120)) { loop.stop() }
        drain()
        loop.run()
        if let watchdog { loop.cancel(watchdog) }
        spool.onReplayReady = nil
        let seconds = start.duration(to: .now).seconds
        spool.close()
        loop.close()
        return [
            ("spool recovery at open (\(found) records, every CRC checked)",
             "\(format(Double(found) / recoverySeconds, 0)) records/s (\(format(recoverySeconds * 1000, 0)) ms)"),
            ("spool replay from disk, read-ahead + acknowledge (\(replayed) records)",
             "\(format(Double(replayed) / seconds, 0)) records/s"),
        ]
    }

    static func makeLoop() -> EventLoop {
        do throws(Errno) {
            return try EventLoop()
        } catch {
            Console.err("empalink-bench: cannot create an event loop: \(error)")
            exitProcess(1)
        }
    }

    static func directory() -> String {
        if let chosen = getenv("SPOOL_BENCH_DIR") { return String(cString: chosen) + "/empalink-bench-\(getpid())" }
        return "/var/tmp/empalink-bench-spool-\(getpid())"
    }

    static func removeTree(_ path: String) {
        for name in (try? FileSystem.contentsOfDirectory(path)) ?? [] {
            let child = path + "/" + name
            if FileSystem.isDirectory(child) { Self.removeTree(child) } else { try? FileSystem.removeFile(child) }
        }
        _ = rmdir(path)
    }
}

/// Appends in slices on the loop so that timers and writer reports run in between, as in the agent.
final class AppendDriver: @unchecked Sendable {
    // @unchecked: used on the loop thread only.
    let spool: Spool
    let key: SpoolStreamKey
    let loop: EventLoop
    let start = MonotonicInstant.now
    let deadline: MonotonicInstant
    var appended = 0
    var ringFullRetries = 0

    init(spool: Spool, key: SpoolStreamKey, loop: EventLoop, seconds: Double) {
        self.spool = spool
        self.key = key
        self.loop = loop
        self.deadline = self.start.advanced(by: .nanoseconds(Int64(seconds * 1e9)))
    }

    func step() {
        SpoolBenchmark.topic.withUnsafeBytes { topic in
            SpoolBenchmark.message.withUnsafeBytes { message in
                var count = 0
                while count < 2000 {
                    switch self.spool.append(key: self.key, topic: topic, message: message) {
                    case .appended(let id):
                        self.spool.acknowledge(id)
                        self.appended += 1
                        count += 1
                    case .dropped:
                        self.ringFullRetries += 1
                        sched_yield()
                    }
                }
            }
        }
        if MonotonicInstant.now < self.deadline {
            self.loop.execute { self.step() }
        } else {
            self.loop.stop()
        }
    }
}
