#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import Posix
import Synchronization

/// Event-loop benchmarks: cross-thread hand-over, timer accuracy, idle wake-ups.
enum LoopBenchmarks {
    static var cpuCount: Int { Int(sysconf(CInt(_SC_NPROCESSORS_ONLN))) }

    /// Ping-pong between two loops on two threads: each hop is an `execute` that wakes an idle loop through
    /// its eventfd, so one round trip is two wake-ups and two context switches.
    static func crossThreadRoundTrips(count: Int) throws(Errno) -> (String, String) {
        let left = try EventLoop()
        let right = try EventLoop()
        let game = PingPong(left: left, right: right, rounds: count)
        left.execute { game.ping() }
        let leftThread = try PosixThread.spawn(name: "bench-left") {
            left.run()
            left.close()
        }
        let rightThread = try PosixThread.spawn(name: "bench-right") {
            right.run()
            right.close()
        }
        leftThread.join()
        rightThread.join()
        let elapsed = game.elapsed
        let perSecond = Double(count) / elapsed.seconds
        return ("execute round trips between two loop threads", "\(format(perSecond, 0)) /s "
            + "(\(format(elapsed.seconds * 1e6 / Double(count), 2)) µs each)")
    }

    /// One producer thread submitting work as fast as it can; the loop drains it in batches.
    static func executeThroughput(count: Int) throws(Errno) -> (String, String) {
        let loop = try EventLoop()
        let executed = Atomic<Int>(0)
        let start = MonotonicInstant.now
        let finish = Mutex<MonotonicInstant?>(nil)
        let producer = try PosixThread.spawn(name: "bench-producer") {
            for index in 0..<count {
                loop.execute {
                    executed.add(1, ordering: .relaxed)
                    if index == count - 1 {
                        finish.withLock { $0 = .now }
                        loop.stop()
                    }
                }
            }
        }
        loop.run()
        let wakeUps = loop.wakeUpCount
        loop.close()
        producer.join()
        let end = finish.withLock { $0 } ?? .now
        let seconds = start.duration(to: end).seconds
        return ("execute from one producer thread (one way)", "\(format(Double(count) / seconds, 0)) /s, "
            + "\(format(Double(count) / Double(max(wakeUps, 1)), 1)) items per wake-up")
    }

    /// Schedules `count` one-shot timers 1 ms apart and records how late each fires (it is never early).
    static func timerLateness(count: Int) throws(Errno) -> [(String, String)] {
        let loop = try EventLoop()
        defer { loop.close() }
        var lateness: [Double] = []
        lateness.reserveCapacity(count)
        let base = MonotonicInstant.now.advanced(by: .milliseconds(10))
        for index in 0..<count {
            let deadline = base.advanced(by: .milliseconds(index))
            try loop.scheduleTimer(at: deadline) {
                lateness.append(deadline.duration(to: .now).seconds * 1e6)
                if lateness.count == count { loop.stop() }
            }
        }
        loop.run()
        lateness.sort()
        func percentile(_ p: Double) -> Double { lateness[min(count - 1, Int(Double(count) * p))] }
        let early = lateness.filter { $0 < 0 }.count
        return [
            ("timer lateness p50 (\(count) timers, 1 ms apart)", "\(format(percentile(0.50), 1)) µs"),
            ("timer lateness p99", "\(format(percentile(0.99), 1)) µs"),
            ("timer lateness max", "\(format(lateness.last ?? 0, 1)) µs (early: \(early))"),
        ]
    }

    /// Counts the loop's wake-ups while nothing happens except, optionally, one repeating timer.
    static func idleWakeUps(seconds: Int, repeatingTimer: Duration?) throws(Errno) -> (String, String) {
        let loop = try EventLoop()
        if let repeatingTimer {
            try loop.scheduleTimer(after: repeatingTimer, repeating: repeatingTimer) {}
        }
        let counts = Mutex<[UInt64]>([])
        let thread = try PosixThread.spawn(name: "bench-idle") {
            loop.run()
            loop.close()
        }
        loop.execute { counts.withLock { $0.append(loop.wakeUpCount) } }
        sleep(UInt32(seconds))
        loop.execute {
            counts.withLock { $0.append(loop.wakeUpCount) }
            loop.stop()
        }
        thread.join()
        let samples = counts.withLock { $0 }
        // The second reading's own wake-up is not idle.
        let wakeUps = samples.count == 2 ? samples[1] - samples[0] - 1 : 0
        let name = repeatingTimer.map { "idle wake-ups with one \($0) repeating timer" } ?? "idle wake-ups, no timers"
        return (name, "\(format(Double(wakeUps) / Double(seconds), 2)) /s over \(seconds) s")
    }
}

/// The state of ``LoopBenchmarks/crossThreadRoundTrips(count:)``: `remaining` is touched by the left loop only.
private final class PingPong: @unchecked Sendable {
    let left: EventLoop
    let right: EventLoop
    var remaining: Int
    var started = false
    var start = MonotonicInstant.now
    var end = MonotonicInstant.now

    init(left: EventLoop, right: EventLoop, rounds: Int) {
        self.left = left
        self.right = right
        self.remaining = rounds
    }

    var elapsed: Duration { self.start.duration(to: self.end) }

    /// On the left loop.
    func ping() {
        if !self.started {
            self.started = true
            self.start = .now
        }
        if self.remaining == 0 {
            self.end = .now
            self.right.stop()
            self.left.stop()
            return
        }
        self.remaining -= 1
        self.right.execute { self.pong() }
    }

    /// On the right loop.
    func pong() {
        self.left.execute { self.ping() }
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = self.components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }
}

extension String {
    func padded(to width: Int) -> String {
        self.count >= width ? self : self + String(repeating: " ", count: width - self.count)
    }
}

func format(_ value: Double, _ decimals: Int) -> String {
    guard value.isFinite else { return "-" }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    if decimals == 0 { return String(Int(rounded)) }
    let whole = Int(rounded)
    var fraction = String(Int(((abs(rounded) - Double(abs(whole))) * scale).rounded()))
    while fraction.count < decimals { fraction = "0" + fraction }
    return (rounded < 0 && whole == 0 ? "-" : "") + "\(whole).\(fraction)"
}

func exitProcess(_ code: CInt) -> Never {
    exit(code)
}
