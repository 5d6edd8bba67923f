import BlueZ
import E4
import EmpaLink
import EventLoop
import Posix

#if canImport(Glibc)
import Glibc
#endif

/// The event loop on its own (a wake-up, a timer) and the notification read path through it: a
/// `SOCK_SEQPACKET` socketpair stands in for BlueZ's `AcquireNotify` socket.
///
/// Each iteration runs ``EventLoop/run()`` until a handler calls ``EventLoop/stop()``: one bounded turn of the
/// loop, `epoll_wait` included, measured on the loop's own thread (the counter counts only this thread).
enum EventLoopChecks {
    static func run(iterations: Int) throws(Errno) -> [AllocationMeasurement] {
        var results: [AllocationMeasurement] = []
        results += try Self.loopOnly(iterations: iterations)
        results += try Self.notifications(iterations: iterations)
        return results
    }

    static func loopOnly(iterations: Int) throws(Errno) -> [AllocationMeasurement] {
        let loop = try EventLoop()
        defer { loop.close() }
        var results: [AllocationMeasurement] = []

        // A wake-up with nothing to do but one queued closure that stops the loop: the closure value is made
        // once, as a caller holding a prepared work item would. Known: 1 allocation per `execute` in both
        // configurations, at EventLoop+Execute.swift:15 (`shared.work.append(work)`: storing the closure in
        // `[@Sendable () -> Void]` wraps it in a reabstraction thunk). Control plane, not per notification.
        let stop: @Sendable () -> Void = { loop.stop() }
        results.append(.measure("loop.wakeup.execute", iterations: iterations,
                                limit: Budget.perIteration(release: 1, debug: 1, iterations)) {
            loop.execute(stop)
            loop.run()
        })

        // A repeating timer (how the MQTT client's housekeeping and batch flushes run): fire, re-arm, stop.
        // Debug only: 4 per firing, `self.heap.first` (unspecialised `Collection.first`) at TimerQueue.swift:51,
        // :54 and :81.
        let timer = try loop.scheduleTimer(after: .milliseconds(1), repeating: .milliseconds(1)) { loop.stop() }
        let firings = min(iterations, 500)
        results.append(.measure("loop.timer.repeating", iterations: firings, warmUp: 16,
                                limit: Budget.perIteration(release: 0, debug: 4, firings)) {
            loop.run()
        })
        loop.cancel(timer)

        // A one-shot timer scheduled per iteration: its `TimerQueue.Record` (a class, TimerQueue.swift:61) is
        // allocated by design; debug builds add 3 `self.heap.first` as above. Control plane only (back-off,
        // timeouts), never per notification; it also proves the counter counts (a case that must not read 0).
        results.append(.measure("loop.timer.oneShot", iterations: firings, warmUp: 16,
                                limit: Budget.perIteration(release: 1, debug: 4, firings)) {
            _ = try? loop.scheduleTimer(after: .microseconds(100)) { loop.stop() }
            loop.run()
        })
        return results
    }

    /// Notification fd read → decode → timestamps → IBI engine → sink, through ``NotificationStream``.
    static func notifications(iterations: Int) throws(Errno) -> [AllocationMeasurement] {
        let loop = try EventLoop()
        defer { loop.close() }
        let sink = CountingSink()
        var proxy = CountingSink.Proxy(owner: sink)
        var streams = DeviceStreams()
        let seqpacket = CInt(SOCK_SEQPACKET.rawValue)
        let (bvpOurs, bvpTheirs) = try FileDescriptor.socketPair(type: seqpacket, nonBlocking: true)
        let (accOurs, accTheirs) = try FileDescriptor.socketPair(type: seqpacket, nonBlocking: true)
        defer {
            bvpTheirs.close()
            accTheirs.close()
        }
        // With a readiness set, as the agent's streams have (one `recvmmsg` per read, a poll per tick).
        let readiness = try NotificationReadiness()
        let bvpStream = try NotificationStream(fileDescriptor: bvpOurs, mtu: 23, loop: loop, readiness: readiness)
        let accStream = try NotificationStream(fileDescriptor: accOurs, mtu: 23, loop: loop, readiness: readiness)
        defer {
            bvpStream.close()
            accStream.close()
        }
        var pending = 0
        var bvpCount = 0
        var accCount = 0
        // Set once, as the device manager does at connect; the closures' captures are boxed here, not per call.
        bvpStream.onNotification = { bytes, _ in
            bvpCount += 1
            streams.receive(.bvp, bytes, arrival: DeviceStreamsChecks.start + Double(bvpCount) * 11 / 64,
                            into: &proxy)
            pending -= 1
            if pending == 0 { loop.stop() }
        }
        accStream.onNotification = { bytes, _ in
            accCount += 1
            streams.receive(.acc, bytes, arrival: DeviceStreamsChecks.start + Double(accCount) * 6 / 32, into: &proxy)
            pending -= 1
            if pending == 0 { loop.stop() }
        }
        let bvp = DeviceStreamsChecks.pulsePackets()
        var acc = E4PacketBytes()
        var written = 0
        var failures = 0
        let send = {
            written += 1
            let zero = InlineArray<6, Int8>(repeating: 0)
            let gravity = InlineArray<6, Int8>(repeating: 64)
            E4ACC.encode(x: zero, y: zero, z: gravity, counter: UInt16(truncatingIfNeeded: written), into: &acc)
            pending = 2
            bvp[written & 63].withUnsafeBytes { bytes in
                if (try? bvpTheirs.write(from: bytes)) != bytes.count { failures += 1 }
            }
            acc.withUnsafeBytes { bytes in
                if (try? accTheirs.write(from: bytes)) != bytes.count { failures += 1 }
            }
            loop.run()
        }
        // 60 s of packets first, past the IBI engine's start-up, so beats are emitted while counting.
        for _ in 0..<(60 * 64 / 11) { send() }
        let before = sink.snapshot
        // The hang-up mask is a stored constant (`NotificationStream.closing`): 0 in debug builds too (was 8 per pair
        // while it was a literal in `ready`).
        var measurement = AllocationMeasurement.measure("notification.read.decode", iterations: iterations,
                                                        warmUp: 0, limit: Budget.perIteration(release: 0, debug: 0,
                                                                                              iterations), send)
        let during = sink.snapshot - before
        if failures > 0 || during.samples != iterations || during.accelerations != iterations {
            measurement.failure = "\(failures) failed writes, \(during.samples) BVP and \(during.accelerations) ACC "
                + "batches decoded for \(iterations) packet pairs"
        } else if during.intervals == 0 {
            measurement.failure = "no IBI emitted while counting: the IBI path was not exercised"
        }
        printError("notification.read.decode: \(during.intervals) IBIs, \(during.heartRates) HR values while counting")

        // The batched path (`batch_ms` > 0): the sockets queue a tick's worth of notifications (4 pairs, about what
        // 250 ms brings at 5 wristbands' worth of one stream) and `drain()` reads them with their kernel times, as
        // the agent's flush tick does through `EmpaticaAPI.drainNotifications()`.
        bvpStream.setReadMode(.deferred)
        accStream.setReadMode(.deferred)
        let perTick = 4
        var drained = 0
        let sendTick = {
            for _ in 0..<perTick {
                written += 1
                let zero = InlineArray<6, Int8>(repeating: 0)
                let gravity = InlineArray<6, Int8>(repeating: 64)
                E4ACC.encode(x: zero, y: zero, z: gravity, counter: UInt16(truncatingIfNeeded: written), into: &acc)
                bvp[written & 63].withUnsafeBytes { bytes in
                    if (try? bvpTheirs.write(from: bytes)) != bytes.count { failures += 1 }
                }
                acc.withUnsafeBytes { bytes in
                    if (try? accTheirs.write(from: bytes)) != bytes.count { failures += 1 }
                }
            }
            readiness.poll()
            drained += bvpStream.drainIfQueued() + accStream.drainIfQueued()
        }
        for _ in 0..<64 { sendTick() }
        let ticks = max(iterations / perTick, 1)
        let beforeDrain = sink.snapshot
        let callsBefore = bvpStream.receiveCalls + accStream.receiveCalls
        drained = 0
        var drainMeasurement = AllocationMeasurement.measure(
            "notification.drain.decode", iterations: ticks, warmUp: 0,
            limit: Budget.perIteration(release: 0, debug: 0, ticks), sendTick)
        let duringDrain = sink.snapshot - beforeDrain
        if failures > 0 || drained != 2 * perTick * ticks || duringDrain.samples != perTick * ticks {
            drainMeasurement.failure = "\(failures) failed writes, \(drained) notifications drained and "
                + "\(duringDrain.samples) BVP batches decoded for \(perTick * ticks) packet pairs"
        } else if bvpStream.receiveCalls + accStream.receiveCalls - callsBefore > UInt64(2 * ticks) {
            drainMeasurement.failure = "\(bvpStream.receiveCalls + accStream.receiveCalls - callsBefore) receive "
                + "calls for \(ticks) ticks of two sockets: a tick's queue was not read in one"
        } else if bvpStream.readTimeFallbacks != 0 || accStream.readTimeFallbacks != 0 {
            drainMeasurement.failure = "notifications without a kernel arrival time on a socketpair"
        }
        return [measurement, drainMeasurement]
    }
}
