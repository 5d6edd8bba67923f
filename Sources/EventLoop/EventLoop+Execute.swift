#if canImport(Glibc)
import Glibc
#endif
import Posix

extension EventLoop {
    /// Runs `work` on the loop thread, after all work submitted before it. Callable from any thread.
    ///
    /// This is how other threads (the spool writer, a test) reach loop-owned state. An idle loop wakes at once;
    /// a burst of submissions costs one wake-up. Work submitted before ``run()`` runs when it starts; work
    /// submitted after ``close()`` is dropped.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        self.shared.withLock { shared in
            guard !shared.closed else { return }
            shared.work.append(work)
            if !shared.wakePending {
                shared.wakePending = true
                self.writeWake()
            }
        }
    }

    /// Empties the eventfd, then runs the queued work. Work that a work item submits runs on a later wake-up,
    /// so one busy producer cannot starve descriptors and timers.
    func drainWork() {
        var counter: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &counter) { raw in
            retryingOnInterrupt { Glibc.read(self.wakeFD.rawValue, raw.baseAddress, 8) }
        }
        self.shared.withLock { shared in
            swap(&shared.work, &self.drainBuffer)
            shared.wakePending = false
        }
        var index = 0
        while index < self.drainBuffer.count {
            let work = self.drainBuffer[index]
            work()
            index += 1
        }
        self.drainBuffer.removeAll(keepingCapacity: true)
    }
}
