#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Posix

extension EventLoop {
    /// Runs the loop on the calling thread until ``stop()``; the calling thread becomes the loop's owner.
    ///
    /// An idle loop sleeps in `epoll_wait` without a timeout: it wakes only for a ready descriptor, a due
    /// timer, a signal, or work from another thread, and allocates nothing per iteration.
    ///
    /// Handlers run one at a time in the order `epoll` reports them; each may register, deregister, schedule
    /// and cancel freely. An event already collected for a registration that a previous handler of the same
    /// batch removed is dropped.
    public func run() {
        precondition(!self.isClosed, "EventLoop.run() after close()")
        let (exchanged, _) = self.running.compareExchange(
            expected: false, desired: true, ordering: .acquiringAndReleasing
        )
        precondition(exchanged, "EventLoop.run() while the loop is already running")
        self.owner.store(UInt(pthread_self()), ordering: .releasing)
        defer {
            self.stopRequested.store(false, ordering: .releasing)
            self.running.store(false, ordering: .releasing)
        }
        while !self.stopRequested.load(ordering: .acquiring) {
            let events = self.eventBuffer.assumingMemoryBound(to: epoll_event.self)
            let count = epoll_wait(self.epoll.rawValue, events, CInt(self.eventCapacity), -1)
            if count < 0 {
                let error = Errno.current
                if error == .interrupted { continue }
                // EBADF, EFAULT, EINVAL: the loop's own descriptor or buffer is broken.
                preconditionFailure("epoll_wait failed: \(error)")
            }
            for index in 0..<Int(count) {
                let token = clinux_epoll_event_token(events, CInt(index))
                let bits = clinux_epoll_event_bits(events, CInt(index))
                self.dispatch(token: token, bits: bits)
            }
            if Int(count) == self.eventCapacity && self.eventCapacity < EventLoop.maximumEventCapacity {
                self.growEventBuffer()
            }
        }
    }

    private func dispatch(token: UInt64, bits: UInt32) {
        switch token {
        case EventLoop.wakeToken:
            self.drainWork()
        case EventLoop.timerToken:
            self.fireDueTimers()
        case EventLoop.signalToken:
            self.deliverSignals()
        default:
            guard let entry = self.registrations[token] else { return }  // deregistered earlier in this batch
            entry.handler(IOEvents(rawValue: bits).intersection(.known))
        }
    }

    /// Doubles the epoll buffer after a full batch, so that a busy loop needs fewer `epoll_wait` calls.
    private func growEventBuffer() {
        let capacity = self.eventCapacity * 2
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: clinux_epoll_event_size() * capacity, alignment: 8)
        self.eventBuffer.deallocate()
        self.eventBuffer = buffer
        self.eventCapacity = capacity
    }
}
