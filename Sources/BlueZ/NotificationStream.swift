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
/// Given a ``NotificationReadiness`` (the agent's streams all have one per adapter), the stream registers its socket
/// there: the owner's tick then asks once which sockets hold data and calls ``drainIfQueued()``, and every read,
/// deferred or eager, takes what is queued (up to 16 notifications) in one `recvmmsg` instead of a `recvmsg` per
/// notification and one more that finds the queue empty (``receiveCalls`` counts them).
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
    /// The owner's readiness set, when the socket is registered there (then its shared buffers are read into).
    let readiness: NotificationReadiness?

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
    /// Receive system calls made (`recvmsg` or `recvmmsg`), including those that found the queue empty.
    public private(set) var receiveCalls: UInt64 = 0
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
    /// - Parameters:
    ///   - mtu: the ATT MTU from `AcquireNotify`; the buffer is sized to hold any notification.
    ///   - readiness: the owner's set, to drain only sockets that hold data (``drainIfQueued()``) and read them in
    ///     bulk; without one (or for an MTU beyond ``NotificationReadiness/slotSize``, or if the set refuses the
    ///     socket) every drain asks the socket and reads a notification per call.
    public init(fileDescriptor: FileDescriptor, mtu: Int, loop: EventLoop,
                readiness: NotificationReadiness? = nil) throws(Errno) {
        self.fileDescriptor = fileDescriptor
        self.loop = loop
        let size = max(mtu, 23) + 1
        self.buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 8)
        if let readiness, size <= NotificationReadiness.slotSize, readiness.add(fileDescriptor) {
            self.readiness = readiness
        } else {
            self.readiness = nil
        }
        // Not every descriptor BlueZ could hand over is a socket that takes the option (a pipe, say): then each
        // notification gets its read time, counted in ``readTimeFallbacks``.
        try? fileDescriptor.enableReceiveTimestamps()
        do {
            self.registration = try loop.register(fileDescriptor, interest: .readable) { [weak self] events in
                self?.ready(events)
            }
        } catch {
            // Every stored property is set, so `deinit` runs after this throw and frees the buffer; the socket is
            // closed here once (`deinit` would close it again, perhaps a number already reused elsewhere).
            self.readiness?.remove(fileDescriptor)
            fileDescriptor.close()
            self.isOpen = false
            throw error
        }
    }

    deinit {
        if self.isOpen {
            if let registration = self.registration { self.loop.deregister(registration) }
            self.readiness?.remove(self.fileDescriptor)
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

    /// ``drain()`` if the readiness set's last ``NotificationReadiness/poll()`` saw data queued (or a hang-up) on
    /// this socket, or if the stream has no set; else nothing, without a system call.
    ///
    /// - Returns: the number read.
    @discardableResult
    public func drainIfQueued() -> Int {
        if let readiness = self.readiness, !readiness.isQueued(self.fileDescriptor) { return 0 }
        return self.drain()
    }

    /// Reads every queued notification (at most ``readsPerDrain``), calling ``onNotification`` for each.
    ///
    /// - Returns: the number read.
    @discardableResult
    public func drain() -> Int {
        let reads = self.read(atMost: NotificationStream.readsPerDrain)
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
        let reads = self.read(atMost: NotificationStream.readsPerWakeup)
        // Data is read before a hang-up is honoured, so the last notifications are not lost.
        if self.isOpen, reads < NotificationStream.readsPerWakeup, hangup {
            self.finish(nil)
        }
    }

    /// Reads until the queue is empty, the stream closes, or `limit` notifications were read; returns how many.
    func read(atMost limit: Int) -> Int {
        var reads = 0
        // The shared buffers, unless a handler further up the stack is reading into them (a notification that
        // closes the device drains its other streams).
        if let readiness = self.readiness, !readiness.batchInUse {
            readiness.batchInUse = true
            defer { readiness.batchInUse = false }
            let batch = readiness.batch
            while self.isOpen, reads < limit {
                let received: Int
                do {
                    self.receiveCalls &+= 1
                    received = try batch.receive(from: self.fileDescriptor)
                } catch {
                    self.finish(error)
                    break
                }
                var index = 0
                while self.isOpen, index < received {
                    let datagram = batch.datagram(index)
                    if datagram.count == 0 {
                        self.finish(nil)
                        break
                    }
                    self.deliver(datagram, batch.bytes(index))
                    reads += 1
                    index += 1
                }
                // Fewer than asked for: the queue was empty when the kernel looked.
                if received < batch.capacity { break }
            }
            return reads
        }
        while self.isOpen, reads < limit {
            guard self.readOne() else { break }
            reads += 1
        }
        return reads
    }

    /// Reads one notification and hands it on; `false` when none was queued or the stream closed.
    func readOne() -> Bool {
        let datagram: ReceivedDatagram
        do {
            self.receiveCalls &+= 1
            datagram = try self.fileDescriptor.receiveDatagram(into: self.buffer)
        } catch {
            if error != .wouldBlock { self.finish(error) }
            return false
        }
        if datagram.count == 0 {
            self.finish(nil)
            return false
        }
        self.deliver(datagram, UnsafeRawBufferPointer(self.buffer))
        return true
    }

    /// Counts a datagram and hands it on: `bytes` holds what was received, cut to this stream's buffer size (the
    /// MTU and one byte) as a read into that buffer would have cut it.
    func deliver(_ datagram: ReceivedDatagram, _ bytes: UnsafeRawBufferPointer) {
        let kept = min(datagram.count, self.buffer.count, bytes.count)
        if datagram.truncated || datagram.count > self.buffer.count { self.truncated &+= 1 }
        if datagram.closedDescriptors > 0 { self.passedDescriptors &+= UInt64(datagram.closedDescriptors) }
        let arrival: Double
        if let time = datagram.kernelTime {
            arrival = time
        } else {
            self.readTimeFallbacks &+= 1
            arrival = Self.now()
        }
        self.count &+= 1
        self.onNotification?(UnsafeRawBufferPointer(rebasing: bytes[0..<kept]), arrival)
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
        self.readiness?.remove(self.fileDescriptor)
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
