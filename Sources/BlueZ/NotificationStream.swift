#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import Posix

/// Reads GATT notifications from an `AcquireNotify` socket on the event loop: one datagram is one notification,
/// lent to ``onNotification`` with the time the kernel queued it.
///
/// Two ways to read (``readMode``):
/// - ``ReadMode/eager``: the loop wakes for every notification and reads it at once (`batch_ms = 0`).
/// - ``ReadMode/deferred``: the socket queues notifications and the owner reads them in bulk with ``drain()`` at
///   its batch tick. While the owner's tick is stopped (nothing was due), the stream is *armed*: the next
///   notification wakes the loop once, the stream stops watching readability and calls ``onPending`` so the owner
///   restarts its tick. Hang-ups and errors are reported in either mode.
///
/// Arrival times come from the kernel (`SO_TIMESTAMPNS`), so a notification read 250 ms late still carries the
/// time it came; a datagram without one (a socket that refused the option) is stamped with its read time and
/// counted (``readTimeFallbacks``).
///
/// A Unix socketpair's queue is bounded by the *sender's* send buffer, not by ours (Linux charges a queued datagram
/// to its sender: at the default 208 KiB, 278 notifications of 20 bytes; setting our `SO_RCVBUF` changes nothing),
/// so the stream cannot enlarge it. A drain that finds at least ``highWaterMark`` notifications queued means the
/// queue came within a factor of two of that limit: it is counted (``highWaterDrains``) and the stream reads
/// eagerly from then on, as it would with `batch_ms = 0`.
///
/// The receive buffer is allocated once; the steady state allocates nothing here. A hang-up, error or end of file
/// means the link or BlueZ dropped the socket: the stream closes itself and calls ``onClose`` once.
public final class NotificationStream {
    /// How the stream reads its socket.
    public enum ReadMode: Sendable, Equatable {
        /// A wake-up and a read per notification.
        case eager
        /// Reads in bulk at ``NotificationStream/drain()``.
        case deferred
    }

    public let fileDescriptor: FileDescriptor
    let loop: EventLoop
    var registration: IORegistration?
    let buffer: UnsafeMutableRawBufferPointer

    /// Called for each notification with its arrival time (seconds since 1970); the bytes are valid only during the
    /// call.
    public var onNotification: ((UnsafeRawBufferPointer, Double) -> Void)?
    /// Called when a deferred, armed stream sees its first notification (see ``ReadMode/deferred``).
    public var onPending: (() -> Void)?
    /// Called once when the socket closes (peer hang-up, error, or ``close()``).
    public var onClose: ((Errno?) -> Void)?
    public private(set) var isOpen = true
    public private(set) var readMode: ReadMode = .eager
    /// Whether readability is watched (eager, or deferred and armed).
    public private(set) var watchesReadability = true
    /// Notifications read, for metrics.
    public private(set) var count: UInt64 = 0
    /// Notifications stamped with their read time because the kernel gave none.
    public private(set) var readTimeFallbacks: UInt64 = 0
    /// Wake-ups for readability (eager reads, or an armed deferred stream's first notification).
    public private(set) var readinessWakeups: UInt64 = 0
    /// Calls to ``drain()`` that read something.
    public private(set) var drains: UInt64 = 0
    /// Drains that found at least ``highWaterMark`` notifications queued.
    public private(set) var highWaterDrains: UInt64 = 0
    /// Notifications longer than the buffer (cut), and descriptors a peer passed along (closed).
    public private(set) var truncated: UInt64 = 0
    public private(set) var passedDescriptors: UInt64 = 0
    /// Whether the queue reached ``highWaterMark`` once, so the stream reads eagerly whatever its mode.
    public private(set) var overrun = false

    /// What ends the stream once its data is read (a stored constant: a literal here would allocate per call in
    /// debug builds).
    static let closing: IOEvents = [.hangup, .error, .readHangup]
    /// Most notifications read per wake-up, so one busy stream cannot starve the others.
    static let readsPerWakeup = 16
    /// Half the measured queue limit of a socketpair at Linux's default send buffer (278 notifications of 20 bytes,
    /// 167 of 244): a drain that reads this many comes too close to losing notifications.
    public static let highWaterMark = 128
    /// Most notifications one ``drain()`` reads (the queue holds fewer; a bound against a peer that never stops).
    static let readsPerDrain = 512

    /// Starts reading `fd` (non-blocking; the stream owns and closes it), eagerly until ``setReadMode(_:)``.
    ///
    /// - Parameter mtu: the ATT MTU from `AcquireNotify`; the buffer is sized to hold any notification.
    public init(fileDescriptor: FileDescriptor, mtu: Int, loop: EventLoop) throws(Errno) {
        self.fileDescriptor = fileDescriptor
        self.loop = loop
        self.buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(mtu, 23) + 1, alignment: 8)
        // Not every descriptor BlueZ could hand over is a socket that takes the option (a pipe, say): then each
        // notification gets its read time, counted in ``readTimeFallbacks``.
        try? fileDescriptor.enableReceiveTimestamps()
        do {
            self.registration = try loop.register(fileDescriptor, interest: .readable) { [weak self] events in
                self?.ready(events)
            }
        } catch {
            self.buffer.deallocate()
            fileDescriptor.close()
            throw error
        }
    }

    deinit {
        if self.isOpen {
            if let registration = self.registration { self.loop.deregister(registration) }
            self.fileDescriptor.close()
        }
        self.buffer.deallocate()
    }

    /// Switches between a wake-up per notification and reads at ``drain()``. A deferred stream starts armed.
    public func setReadMode(_ mode: ReadMode) {
        self.readMode = mode
        self.watch(readable: true)
    }

    /// Watches readability again, so the next notification wakes the loop and calls ``onPending``: for an owner
    /// whose tick found nothing to do and stopped.
    public func arm() {
        self.watch(readable: true)
    }

    /// Reads every queued notification (at most ``readsPerDrain``), calling ``onNotification`` for each.
    ///
    /// - Returns: the number read.
    @discardableResult
    public func drain() -> Int {
        var reads = 0
        while self.isOpen, reads < NotificationStream.readsPerDrain {
            guard self.readOne() else { break }
            reads += 1
        }
        if reads > 0 { self.drains &+= 1 }
        if reads >= NotificationStream.highWaterMark {
            self.highWaterDrains &+= 1
            self.overrun = true
            self.watch(readable: true)
        }
        return reads
    }

    func ready(_ events: IOEvents) {
        let hangup = !events.isDisjoint(with: NotificationStream.closing)
        if events.contains(.readable) && !hangup {
            self.readinessWakeups &+= 1
            if self.readMode == .deferred && !self.overrun {
                // Queue from here on; the owner drains at its tick.
                self.watch(readable: false)
                self.onPending?()
                return
            }
        }
        var reads = 0
        while self.isOpen, reads < NotificationStream.readsPerWakeup {
            guard self.readOne() else { break }
            reads += 1
        }
        // Data is read before a hang-up is honoured, so the last notifications are not lost.
        if self.isOpen, reads < NotificationStream.readsPerWakeup, hangup {
            self.finish(nil)
        }
    }

    /// Reads one notification and hands it on; `false` when none was queued or the stream closed.
    func readOne() -> Bool {
        let datagram: ReceivedDatagram
        do {
            datagram = try self.fileDescriptor.receiveDatagram(into: self.buffer)
        } catch {
            if error != .wouldBlock { self.finish(error) }
            return false
        }
        if datagram.count == 0 {
            self.finish(nil)
            return false
        }
        if datagram.truncated { self.truncated &+= 1 }
        if datagram.closedDescriptors > 0 { self.passedDescriptors &+= UInt64(datagram.closedDescriptors) }
        let arrival: Double
        if let time = datagram.kernelTime {
            arrival = time
        } else {
            self.readTimeFallbacks &+= 1
            arrival = Self.now()
        }
        self.count &+= 1
        self.onNotification?(UnsafeRawBufferPointer(rebasing: self.buffer[0..<min(datagram.count, self.buffer.count)]),
                             arrival)
        return true
    }

    func watch(readable: Bool) {
        let wanted = readable || self.readMode == .eager || self.overrun
        guard self.isOpen, wanted != self.watchesReadability, let registration = self.registration else { return }
        // Hang-ups and errors are reported whatever the interest.
        do {
            try self.loop.reregister(registration, interest: wanted ? .readable : [])
            self.watchesReadability = wanted
        } catch {
            self.finish(error)
        }
    }

    func finish(_ error: Errno?) {
        guard self.isOpen else { return }
        self.isOpen = false
        if let registration = self.registration { self.loop.deregister(registration) }
        self.registration = nil
        self.fileDescriptor.close()
        let handler = self.onClose
        self.onClose = nil
        handler?(error)
    }

    /// Stops reading and closes the socket (BlueZ then stops the notifications).
    public func close() {
        self.finish(nil)
    }

    /// Wall-clock time in seconds since 1970, the clock `SO_TIMESTAMPNS` stamps with.
    static func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}
