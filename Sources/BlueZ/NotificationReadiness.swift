#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Posix

/// Which of many notification sockets have something queued, learnt with one `epoll_wait`, and the buffers to read
/// each with one `recvmmsg` (SPEC §19).
///
/// At a batch tick every socket of every connected wristband is drained; most of them, most ticks, hold nothing
/// (an E4's temperature, battery and tag characteristics send once a second or less). Asking each socket costs a
/// `recvmsg` that fails with `EAGAIN` — at 20 wristbands about two of every three system calls of a drain. Instead,
/// the streams of one owner (an ``EmpaticaAPI``, one per adapter) register their descriptors here, in an epoll
/// instance of its own that no thread waits on. ``poll()`` asks it, without blocking, which hold data or have hung
/// up; ``NotificationStream/drainIfQueued()`` then reads only those, each with one `recvmmsg` (``batch``) that takes
/// what is queued (up to 16) and learns in the same call that the queue is empty.
///
/// The events are level-triggered and nobody else consumes them, so a socket that has data is reported at every
/// poll until it is read. If the set cannot answer (`epoll_wait` fails), ``isQueued(_:)`` says yes for every socket
/// and the drain asks each, as without a readiness set.
///
/// Memory is sized when a socket is added (at a connection); ``poll()`` and the reads allocate nothing.
public final class NotificationReadiness {
    /// The most bytes of a notification the shared ``batch`` keeps: the largest ATT MTU (517) and one more, so
    /// a longer datagram is still seen as cut. A stream whose MTU is larger reads on its own.
    public static let slotSize = 518

    let epoll: FileDescriptor
    var events: UnsafeMutableRawPointer
    var eventCapacity: Int
    /// The ``poll()`` generation at which each descriptor (by number) was last seen queued.
    var marks: [UInt32] = []
    var generation: UInt32 = 1
    /// Whether the last ``poll()`` failed, so every socket counts as queued until the next.
    var pollFailed = false
    /// Registered descriptors.
    public private(set) var registered = 0
    /// Calls to ``poll()``.
    public private(set) var polls: UInt64 = 0
    /// Polls that failed (each then read every socket).
    public private(set) var failedPolls: UInt64 = 0
    /// The shared receive buffers; ``NotificationStream`` uses them while ``batchInUse`` is false.
    public let batch: DatagramBatch
    var batchInUse = false

    /// Creates the epoll instance.
    ///
    /// - Throws: ``Errno`` when the kernel refuses one (descriptor limit).
    public init() throws(Errno) {
        let fd = epoll_create1(CInt(EPOLL_CLOEXEC))
        if fd < 0 { throw Errno.current }
        self.epoll = FileDescriptor(rawValue: fd)
        self.eventCapacity = 16
        self.events = UnsafeMutableRawPointer.allocate(byteCount: clinux_epoll_event_size() * 16, alignment: 8)
        self.batch = DatagramBatch(capacity: Int(CLINUX_DATAGRAM_BATCH_MAX), slotSize: Self.slotSize)
    }

    deinit {
        self.epoll.close()
        self.events.deallocate()
    }

    /// Adds a socket; `false` (the stream then reads without the set) when epoll refuses it.
    func add(_ descriptor: FileDescriptor) -> Bool {
        let fd = Int(descriptor.rawValue)
        guard fd >= 0 else { return false }
        let interest = CLINUX_EPOLLIN | CLINUX_EPOLLRDHUP
        guard clinux_epoll_ctl(self.epoll.rawValue, EPOLL_CTL_ADD, descriptor.rawValue, interest, UInt64(fd)) == 0
        else { return false }
        if fd >= self.marks.count { self.marks.append(contentsOf: repeatElement(0, count: fd + 1 - self.marks.count)) }
        self.marks[fd] = 0
        self.registered += 1
        if self.registered > self.eventCapacity {
            let capacity = max(self.registered, self.eventCapacity * 2)
            self.events.deallocate()
            self.events = UnsafeMutableRawPointer.allocate(byteCount: clinux_epoll_event_size() * capacity,
                                                          alignment: 8)
            self.eventCapacity = capacity
        }
        return true
    }

    /// Removes a socket before it is closed.
    func remove(_ descriptor: FileDescriptor) {
        let fd = Int(descriptor.rawValue)
        _ = clinux_epoll_ctl(self.epoll.rawValue, EPOLL_CTL_DEL, descriptor.rawValue, 0, 0)
        if fd >= 0, fd < self.marks.count { self.marks[fd] = 0 }
        self.registered = max(self.registered - 1, 0)
    }

    /// Learns which registered sockets hold data (or have hung up), without blocking: one system call.
    public func poll() {
        self.polls &+= 1
        self.generation &+= 1
        if self.generation == 0 { self.generation = 1 }
        self.pollFailed = false
        guard self.registered > 0 else { return }
        var count: CInt
        repeat {
            count = epoll_wait(self.epoll.rawValue, self.events.assumingMemoryBound(to: epoll_event.self),
                               CInt(self.eventCapacity), 0)
        } while count < 0 && Errno.current == .interrupted
        if count < 0 {
            self.pollFailed = true
            self.failedPolls &+= 1
            return
        }
        let events = self.events.assumingMemoryBound(to: epoll_event.self)
        for index in 0..<Int(count) {
            let fd = Int(truncatingIfNeeded: clinux_epoll_event_token(events, CInt(index)))
            if fd >= 0, fd < self.marks.count { self.marks[fd] = self.generation }
        }
    }

    /// Whether the last ``poll()`` saw `descriptor` holding data or hung up (always `true` after a failed poll).
    public func isQueued(_ descriptor: FileDescriptor) -> Bool {
        if self.pollFailed { return true }
        let fd = Int(descriptor.rawValue)
        return fd >= 0 && fd < self.marks.count && self.marks[fd] == self.generation
    }
}
