#if canImport(Glibc)
import Glibc
#endif
import Posix
import Testing
import TestSupport

@testable import EventLoop

@Suite("EventLoop cross-thread work and stop")
struct EventLoopExecuteTests {
    @Test func executeFromAnotherThreadRunsOnTheLoopThreadInSubmissionOrder() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        let loopThread = UInt(pthread_self())
        let order = Shared<[Int]>([])
        let offLoop = Shared(0)
        let count = 2000
        let producer = try PosixThread.spawn(name: "producer") {
            for index in 0..<count {
                loop.execute {
                    if UInt(pthread_self()) != loopThread || !loop.inEventLoop { offLoop.withLock { $0 += 1 } }
                    order.withLock { $0.append(index) }
                    if index == count - 1 { loop.stop() }
                }
            }
        }
        try loop.runForTest()
        producer.join()
        #expect(offLoop.value == 0)
        #expect(order.value == Array(0..<count))
    }

    @Test func executeWakesAnIdleLoop() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        let ran = Shared(false)
        let helper = try PosixThread.spawn {
            sleepMilliseconds(30)  // let the loop block in epoll_wait with nothing to do
            loop.execute {
                ran.withLock { $0 = true }
                loop.stop()
            }
        }
        try loop.runForTest()
        helper.join()
        #expect(ran.value)
    }

    @Test func idleLoopWakesOnlyForWork() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        let wakeUpsSeen = Shared<UInt64>(0)
        let helper = try PosixThread.spawn {
            sleepMilliseconds(100)  // idle time in which nothing may wake the loop
            loop.execute {
                wakeUpsSeen.withLock { $0 = loop.wakeUpCount }
                loop.stop()
            }
        }
        try loop.runForTest()  // its guard timer is armed far in the future
        helper.join()
        #expect(wakeUpsSeen.value == 1, "only the execute() may have woken the idle loop")
    }

    @Test func stopFromAnotherThreadEndsRun() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        #expect(!loop.isRunning)
        let helper = try PosixThread.spawn {
            sleepMilliseconds(30)
            #expect(!loop.inEventLoop)
            loop.stop()
        }
        try loop.runForTest()
        helper.join()
        #expect(!loop.isRunning)
    }

    @Test func loopRunningOnItsOwnThreadServesExecuteAndStops() throws {
        let loop = try EventLoop()
        // The thread that runs the loop owns it, so it also closes it.
        let thread = try PosixThread.spawn(name: "test-loop") {
            loop.run()
            loop.close()
        }
        let sawLoop = Shared<[Bool]>([])
        for index in 0..<3 {
            loop.execute {
                sawLoop.withLock { $0.append(loop.inEventLoop) }
                if index == 2 { loop.stop() }
            }
        }
        thread.join()
        #expect(sawLoop.value == [true, true, true])
    }

    @Test func workSubmittedBeforeRunRunsWhenItStarts() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        let log = Shared<[Int]>([])
        loop.execute { log.withLock { $0.append(1) } }
        loop.execute {
            log.withLock { $0.append(2) }
            loop.stop()
        }
        try loop.runForTest()
        #expect(log.value == [1, 2])
    }

    @Test func stopBeforeRunMakesRunReturnAndTheLoopCanRunAgain() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        loop.stop()
        loop.run()  // returns at once
        var fired = false
        try loop.scheduleTimer(after: .milliseconds(1)) {
            fired = true
            loop.stop()
        }
        try loop.runForTest()
        #expect(fired)
    }

    @Test func executeAfterCloseIsDroppedWithoutTouchingTheClosedDescriptor() throws {
        let loop = try EventLoop()
        loop.close()
        let ran = Shared(false)
        loop.execute { ran.withLock { $0 = true } }
        loop.stop()
        loop.close()  // twice: harmless
        #expect(!ran.value)
        #expect(throws: Errno.badFileDescriptor) { try loop.scheduleTimer(after: .zero) {} }
    }
}
