#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Posix
import Synchronization

/// One thread's event loop over `epoll`: file-descriptor readiness, timers, signals, and work handed over from
/// other threads.
///
/// The daemon has one loop; it owns BLE (D-Bus), MQTT and every non-thread-safe C handle, as a swift-nio
/// `EventLoop` does. Everything happens on the thread inside ``run()``:
/// - descriptors: ``register(_:interest:handler:)``, ``reregister(_:interest:)``, ``deregister(_:)``;
/// - timers on `CLOCK_MONOTONIC`: ``scheduleTimer(after:repeating:handler:)``, ``cancel(_:)``;
/// - signals through a `signalfd`: ``blockSignals(_:)``, ``onSignal(_:handler:)``;
/// - other threads: ``execute(_:)`` and ``stop()``, the only members that may be called from any thread.
///
/// ## Threads
/// The loop-bound members above must be called on the loop's *owner* thread: the thread that created the loop
/// until ``run()`` starts, then the thread inside ``run()`` (also after it returns). Debug builds check this
/// (``assertInEventLoop(file:line:)``); other threads use ``execute(_:)``.
///
/// ## Lifetime
/// Handlers usually capture the loop or objects that hold it, so a loop with registrations is kept alive by
/// its own handlers. Call ``close()`` after ``run()`` returns: it drops every handler and closes the loop's
/// descriptors; `deinit` does the same as a safety net.
///
/// ## Errors
/// Failures that can only be programming errors (`EBADF`, `EFAULT` from the loop's own descriptors, running a
/// loop twice) stop the process with a message; everything else is thrown as ``Errno``.
public final class EventLoop: @unchecked Sendable {
    // @unchecked: the loop-bound state below is touched only by the owner thread (asserted in debug builds);
    // the cross-thread state is in `owner`, `stopRequested`, `running` (atomics) and `shared` (a Mutex).

    /// Tokens below this are the loop's own descriptors; registrations count up from here.
    static let firstUserToken: UInt64 = 16
    static let wakeToken: UInt64 = 1
    static let timerToken: UInt64 = 2
    static let signalToken: UInt64 = 3

    /// State shared with other threads.
    struct Shared {
        /// Work from ``execute(_:)``, in submission order.
        var work: [@Sendable () -> Void] = []
        /// Whether the eventfd has been written since the loop last drained `work`: saves a syscall per
        /// ``execute(_:)`` when a burst arrives.
        var wakePending = false
        /// Set by ``close()`` before the eventfd is closed, so that no thread writes to a reused descriptor.
        var closed = false
    }

    let epoll: FileDescriptor
    let wakeFD: FileDescriptor
    let timerFD: FileDescriptor

    /// The `pthread_t` of the owner thread.
    let owner: Atomic<UInt>
    let stopRequested = Atomic<Bool>(false)
    let running = Atomic<Bool>(false)
    let shared = Mutex(Shared())

    // Loop-bound state.
    var isClosed = false
    var eventBuffer: UnsafeMutableRawPointer
    var eventCapacity: Int
    var registrations: [UInt64: IOHandlerEntry] = [:]
    /// The live registration token per descriptor number, so that a stale registration (its descriptor was
    /// closed without deregistering and the number reused) never removes the new one from epoll.
    var tokenByDescriptor: [CInt: UInt64] = [:]
    var nextToken: UInt64 = EventLoop.firstUserToken
    var timers = TimerQueue()
    /// The deadline the timerfd is armed for; 0 when disarmed.
    var armedDeadline: UInt64 = 0
    /// While due timers fire, re-arming waits until the batch is done.
    var isFiringTimers = false
    var signalFD: FileDescriptor?
    var signalMask = sigset_t()
    var signalHandlers: [CInt: (CInt) -> Void] = [:]
    var signalBuffer: UnsafeMutableRawPointer
    /// The drained work queue, swapped with ``Shared/work`` so that neither array reallocates in steady state.
    var drainBuffer: [@Sendable () -> Void] = []

    static let initialEventCapacity = 64
    static let maximumEventCapacity = 4096
    static let signalBufferCount = 8

    /// Creates a loop owned by the calling thread.
    ///
    /// - Throws: ``Errno`` when `epoll`, `eventfd` or `timerfd` cannot be created (`EMFILE`, `ENOMEM`).
    public init() throws(Errno) {
        let epoll = epoll_create1(CInt(EPOLL_CLOEXEC))
        guard epoll >= 0 else { throw Errno.current }
        let wake = eventfd(0, CInt(EFD_NONBLOCK | EFD_CLOEXEC))
        guard wake >= 0 else {
            let error = Errno.current
            _ = Glibc.close(epoll)
            throw error
        }
        let timer = timerfd_create(CLOCK_MONOTONIC, CInt(TFD_NONBLOCK | TFD_CLOEXEC))
        guard timer >= 0 else {
            let error = Errno.current
            _ = Glibc.close(epoll)
            _ = Glibc.close(wake)
            throw error
        }
        for (fd, token) in [(wake, EventLoop.wakeToken), (timer, EventLoop.timerToken)] {
            if clinux_epoll_ctl(epoll, EPOLL_CTL_ADD, fd, CLINUX_EPOLLIN, token) != 0 {
                let error = Errno.current
                _ = Glibc.close(epoll)
                _ = Glibc.close(wake)
                _ = Glibc.close(timer)
                throw error
            }
        }
        self.epoll = FileDescriptor(rawValue: epoll)
        self.wakeFD = FileDescriptor(rawValue: wake)
        self.timerFD = FileDescriptor(rawValue: timer)
        self.owner = Atomic(UInt(pthread_self()))
        self.eventCapacity = EventLoop.initialEventCapacity
        self.eventBuffer = UnsafeMutableRawPointer.allocate(
            byteCount: clinux_epoll_event_size() * EventLoop.initialEventCapacity,
            alignment: 8
        )
        self.signalBuffer = UnsafeMutableRawPointer.allocate(
            byteCount: clinux_signalfd_siginfo_size() * EventLoop.signalBufferCount,
            alignment: 8
        )
        self.registrations.reserveCapacity(32)
        self.tokenByDescriptor.reserveCapacity(32)
        self.drainBuffer.reserveCapacity(64)
        self.shared.withLock { $0.work.reserveCapacity(64) }
        sigemptyset(&self.signalMask)
    }

    deinit {
        self.releaseDescriptors()
        self.eventBuffer.deallocate()
        self.signalBuffer.deallocate()
    }

    /// Whether the calling thread is the loop's owner (see "Threads" above).
    public var inEventLoop: Bool {
        self.owner.load(ordering: .acquiring) == UInt(pthread_self())
    }

    /// Whether a thread is inside ``run()``.
    public var isRunning: Bool {
        self.running.load(ordering: .acquiring)
    }

    /// Stops the process in debug builds when called off the loop's owner thread; nothing in release builds.
    ///
    /// Put it at the top of every method of a type whose state belongs to the loop, as nio's `NIOLoopBound` does.
    @inlinable
    public func assertInEventLoop(file: StaticString = #fileID, line: UInt = #line) {
        assert(self.inEventLoop, "called off the event loop thread", file: file, line: line)
    }

    /// Makes ``run()`` return after the current iteration. Callable from any thread, also from a handler.
    ///
    /// Calling it before ``run()`` starts makes that run return at once: a stop is never lost to a race with
    /// the loop thread's start-up. Work already passed to ``execute(_:)`` stays queued for a later ``run()``.
    public func stop() {
        self.stopRequested.store(true, ordering: .releasing)
        if !self.inEventLoop {
            self.shared.withLock { shared in
                if !shared.closed { self.writeWake() }
            }
        }
    }

    /// Drops every handler, timer and queued work item and closes the loop's descriptors.
    ///
    /// Call it on the owner thread when ``run()`` has returned. Registered descriptors are not closed: they
    /// belong to whoever registered them. Calling it again does nothing.
    public func close() {
        self.assertInEventLoop()
        precondition(!self.running.load(ordering: .acquiring), "EventLoop.close() while run() is active")
        guard !self.isClosed else { return }
        // Keep the dropped handlers alive until the loop is consistent: their deinit may call back into it.
        let droppedRegistrations = self.registrations
        let droppedTimers = self.timers
        let droppedSignalHandlers = self.signalHandlers
        self.registrations = [:]
        self.tokenByDescriptor = [:]
        self.timers.removeAll()
        self.signalHandlers = [:]
        self.releaseDescriptors()
        withExtendedLifetime((droppedRegistrations, droppedTimers, droppedSignalHandlers)) {}
    }

    /// Closes the loop's own descriptors once, from ``close()`` or `deinit`.
    private func releaseDescriptors() {
        if self.isClosed { return }
        self.isClosed = true
        let droppedWork = self.shared.withLock { shared in
            shared.closed = true
            let work = shared.work
            shared.work = []
            return work
        }
        self.epoll.close()
        self.wakeFD.close()
        self.timerFD.close()
        self.signalFD?.close()
        self.signalFD = nil
        withExtendedLifetime(droppedWork) {}
    }

    /// Adds one to the eventfd's counter, waking `epoll_wait`. Only `EAGAIN` (counter saturated, so the loop is
    /// awake anyway) can fail here.
    func writeWake() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { raw in
            retryingOnInterrupt { Glibc.write(self.wakeFD.rawValue, raw.baseAddress, 8) }
        }
    }
}
