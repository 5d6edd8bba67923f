#if canImport(Glibc)
import Glibc
#endif
import Posix
import Testing
import TestSupport

@testable import EventLoop

/// Signal delivery through the loop's signalfd.
///
/// The test process has many threads (Swift Testing's pool) that do not block SIGUSR1/SIGUSR2, so a
/// process-directed `kill(getpid(), …)` could land on one of them and kill the run. Each test therefore blocks
/// the signal only in the thread that runs the loop (the test's own thread), sends it thread-directed with
/// `pthread_kill` (or `raise`, which targets the calling thread), and unblocks it again afterwards, after
/// consuming anything still pending. The daemon instead blocks its signals in `main` before any thread exists.
@Suite("EventLoop signals", .serialized)
struct EventLoopSignalTests {
    /// Blocks `signo` in the calling thread for the duration of `body`.
    private func withBlocked(_ signo: CInt, _ body: () throws -> Void) throws {
        try EventLoop.blockSignals([signo])
        defer {
            var set = sigset_t()
            sigemptyset(&set)
            sigaddset(&set, signo)
            var timeout = timespec(tv_sec: 0, tv_nsec: 0)
            while sigtimedwait(&set, nil, &timeout) == signo {}
            _ = try? EventLoop.unblockSignals([signo])
        }
        try body()
    }

    @Test func signalFromAnotherThreadRunsTheHandlerOnTheLoopThread() throws {
        try self.withBlocked(SIGUSR1) {
            let loop = try EventLoop()
            defer { loop.close() }
            let loopThread = pthread_self()
            var delivered: [CInt] = []
            var onLoopThread = false
            try loop.onSignal(SIGUSR1) { signo in
                delivered.append(signo)
                onLoopThread = UInt(pthread_self()) == UInt(loopThread) && loop.inEventLoop
                loop.stop()
            }
            let sender = try PosixThread.spawn {
                sleepMilliseconds(20)  // let the loop go idle
                _ = pthread_kill(loopThread, SIGUSR1)
            }
            try loop.runForTest()
            sender.join()
            #expect(delivered == [SIGUSR1])
            #expect(onLoopThread)
        }
    }

    @Test func raisedSignalReachesItsHandlerAndNotOthers() throws {
        try self.withBlocked(SIGUSR2) {
            try self.withBlocked(SIGUSR1) {
                let loop = try EventLoop()
                defer { loop.close() }
                var delivered: [CInt] = []
                try loop.onSignal(SIGUSR1) { delivered.append($0) }
                try loop.onSignal(SIGUSR2) { signo in
                    delivered.append(signo)
                    loop.stop()
                }
                try loop.scheduleTimer(after: .milliseconds(1)) { _ = raise(SIGUSR2) }
                try loop.runForTest()
                #expect(delivered == [SIGUSR2])
            }
        }
    }

    @Test func removedHandlerNoLongerRuns() throws {
        try self.withBlocked(SIGUSR1) {
            let loop = try EventLoop()
            defer { loop.close() }
            var delivered = 0
            try loop.onSignal(SIGUSR1) { _ in delivered += 1 }
            loop.removeSignalHandler(SIGUSR1)
            try loop.scheduleTimer(after: .milliseconds(1)) { _ = raise(SIGUSR1) }
            try loop.scheduleTimer(after: .milliseconds(30)) { loop.stop() }
            try loop.runForTest()
            #expect(delivered == 0)
        }
    }

    @Test func handlerForAnUnblockedSignalIsRejected() throws {
        let loop = try EventLoop()
        defer { loop.close() }
        try EventLoop.unblockSignals([SIGUSR2])
        #expect(throws: Errno.invalidArgument) { try loop.onSignal(SIGUSR2) { _ in } }
        #expect(throws: Errno.invalidArgument) { try EventLoop.blockSignals([9999]) }
    }
}
