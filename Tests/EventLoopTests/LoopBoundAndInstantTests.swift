#if canImport(Glibc)
import Glibc
#endif
import Posix
import Testing
import TestSupport

@testable import EventLoop

/// A loop-owned, non-Sendable object.
private final class Counter {
    var value = 0
}

@Suite("LoopBound and MonotonicInstant")
struct LoopBoundAndInstantTests {
    @Test func loopBoundValueCrossesThreadsAndIsUsedOnTheLoop() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        let counter = Counter()
        let bound = LoopBound(counter, eventLoop: loop)
        let helper = try PosixThread.spawn {
            for _ in 0..<10 {
                loop.execute { bound.value.value += 1 }
            }
            loop.execute { loop.stop() }
        }
        try loop.runForTest()
        helper.join()
        #expect(counter.value == 10)
    }

    @Test func instantArithmeticSaturatesInsteadOfTrapping() {
        let instant = MonotonicInstant(nanoseconds: 1_000)
        #expect(instant.advanced(by: .nanoseconds(500)).nanoseconds == 1_500)
        #expect(instant.advanced(by: .nanoseconds(-400)).nanoseconds == 600)
        #expect(instant.advanced(by: .seconds(-10)).nanoseconds == 0)
        #expect(instant.advanced(by: .seconds(Int64.max)).nanoseconds == 1_000 + UInt64(Int64.max))  // clamped, no trap
        #expect(instant.duration(to: MonotonicInstant(nanoseconds: 3_000)) == .nanoseconds(2_000))
        #expect(MonotonicInstant(nanoseconds: 3_000).duration(to: instant) == .nanoseconds(-2_000))
        #expect(Duration.milliseconds(1.5).saturatingNanoseconds == 1_500_000)
    }

    @Test func nowIsMonotonic() {
        let first = MonotonicInstant.now
        let second = MonotonicInstant.now
        #expect(first <= second)
    }
}
