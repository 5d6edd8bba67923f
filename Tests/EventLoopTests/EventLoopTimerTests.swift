#if canImport(Glibc)
import Glibc
#endif
import Posix
import Testing
import TestSupport

@testable import EventLoop

@Suite("EventLoop timers")
struct EventLoopTimerTests {
    @Test func oneShotTimerFiresOnceAndNotBeforeItsDeadline() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        var firings: [MonotonicInstant] = []
        let deadline = MonotonicInstant.now.advanced(by: .milliseconds(20))
        try loop.scheduleTimer(at: deadline) { firings.append(.now) }
        // A later timer ends the test, leaving the one-shot timer time to fire twice if it were wrong.
        try loop.scheduleTimer(at: deadline.advanced(by: .milliseconds(60))) { loop.stop() }
        try loop.runForTest()
        #expect(firings.count == 1)
        #expect(firings.allSatisfy { $0 >= deadline })
        #expect(loop.timerCount == 0)
        #expect(loop.armedDeadline == 0, "an empty timer queue must leave the timerfd disarmed")
    }

    @Test func delayFormFiresNotBeforeTheDelay() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        let start = MonotonicInstant.now
        var firedAt: MonotonicInstant?
        try loop.scheduleTimer(after: .milliseconds(15)) {
            firedAt = .now
            loop.stop()
        }
        try loop.runForTest()
        let fired = try #require(firedAt)
        #expect(start.duration(to: fired) >= .milliseconds(15))
    }

    @Test func repeatingTimerFiresUntilItCancelsItself() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        let start = MonotonicInstant.now
        let interval = Duration.milliseconds(3)
        var firings: [MonotonicInstant] = []
        var handle: TimerHandle?
        handle = try loop.scheduleTimer(after: interval, repeating: interval) {
            firings.append(.now)
            if firings.count == 5, let handle {
                #expect(loop.cancel(handle))
                // Give a wrongly surviving timer several periods to show itself.
                _ = try? loop.scheduleTimer(after: interval * 10) { loop.stop() }
            }
        }
        try loop.runForTest()
        #expect(firings.count == 5)
        for (index, firing) in firings.enumerated() {
            #expect(start.duration(to: firing) >= interval * (index + 1), "firing \(index) came early")
        }
        if let handle { #expect(!loop.cancel(handle), "a cancelled timer is no longer pending") }
        #expect(loop.timerCount == 0)
    }

    @Test func cancelledTimerNeverFiresEvenWhenDueInTheSameBatch() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        var fired: [String] = []
        let early = try loop.scheduleTimer(after: .milliseconds(1)) { fired.append("cancelled before run") }
        #expect(loop.cancel(early))
        // Two timers with the same deadline fire in one batch; the first cancels the second.
        let deadline = MonotonicInstant.now.advanced(by: .milliseconds(5))
        var second: TimerHandle?
        try loop.scheduleTimer(at: deadline) {
            fired.append("first")
            if let second { loop.cancel(second) }
        }
        second = try loop.scheduleTimer(at: deadline) { fired.append("second") }
        try loop.scheduleTimer(at: deadline.advanced(by: .milliseconds(30))) { loop.stop() }
        try loop.runForTest()
        #expect(fired == ["first"])
    }

    @Test func manyTimersFireInDeadlineOrderAndTiesInSchedulingOrder() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        let base = MonotonicInstant.now.advanced(by: .milliseconds(5))
        // A fixed permutation of 0..<60 (61 is prime to 60... step 7 is coprime to 60), two timers per slot.
        var expected: [(slot: Int, copy: Int)] = []
        var fired: [(slot: Int, copy: Int)] = []
        for index in 0..<60 {
            let slot = (index * 7) % 60
            for copy in 0..<2 {
                try loop.scheduleTimer(at: base.advanced(by: .microseconds(200 * slot))) {
                    fired.append((slot, copy))
                    if fired.count == 120 { loop.stop() }
                }
            }
        }
        for slot in 0..<60 { for copy in 0..<2 { expected.append((slot, copy)) } }
        #expect(loop.timerCount == 120)
        try loop.runForTest()
        #expect(fired.map(\.slot) == expected.map(\.slot))
        #expect(fired.map(\.copy) == expected.map(\.copy))
    }

    @Test func zeroDelayTimerScheduledByATimerFiresOnALaterPass() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        var log: [String] = []
        try loop.scheduleTimer(after: .milliseconds(1)) {
            log.append("outer")
            _ = try? loop.scheduleTimer(after: .zero) {
                log.append("inner")
                loop.stop()
            }
            log.append("outer done")
        }
        try loop.runForTest()
        #expect(log == ["outer", "outer done", "inner"])
    }

    @Test func nonPositiveRepeatIntervalIsRejected() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        #expect(throws: Errno.invalidArgument) {
            try loop.scheduleTimer(after: .zero, repeating: .zero) {}
        }
        #expect(throws: Errno.invalidArgument) {
            try loop.scheduleTimer(after: .zero, repeating: .milliseconds(-1)) {}
        }
        #expect(loop.timerCount == 0)
    }

    @Test func cancellingManyTimersCompactsTheHeap() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        var handles: [TimerHandle] = []
        for index in 0..<500 {
            handles.append(try loop.scheduleTimer(after: .seconds(60 + index)) {})
        }
        for handle in handles.dropFirst(10) { loop.cancel(handle) }
        #expect(loop.timerCount == 10)
        #expect(loop.timers.heap.count <= 2 * 10 + 64 + 1, "dead heap entries must not pile up")
        for handle in handles.prefix(10) { loop.cancel(handle) }
        #expect(loop.armedDeadline == 0)
    }
}
