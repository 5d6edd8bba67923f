#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// One datagram from ``FileDescriptor/receiveDatagram(into:)``.
public struct ReceivedDatagram: Sendable, Equatable {
    /// Bytes received into the buffer; 0 at end of file.
    public var count: Int
    /// When the kernel queued it, in seconds since 1970 (`CLOCK_REALTIME`), if the message carried the time.
    public var kernelTime: Double?
    /// The datagram was longer than the buffer and was cut to it.
    public var truncated: Bool
    /// Descriptors the peer passed with it (`SCM_RIGHTS`), closed unread.
    public var closedDescriptors: Int
}

extension FileDescriptor {
    /// Asks the kernel to stamp every datagram this socket receives with its arrival time (`SO_TIMESTAMPNS`).
    ///
    /// On a Unix-domain socket the time is when the peer's `send` queued the datagram, so a datagram read late
    /// still says when it came. Read the times with ``receiveDatagram(into:)``.
    ///
    /// - Throws: ``Errno`` (`ENOTSOCK` when this is not a socket).
    public func enableReceiveTimestamps() throws(Errno) {
        if clinux_enable_receive_timestamps(self.rawValue) != 0 { throw Errno.current }
    }

    /// Receives one datagram without blocking, with its kernel arrival time when ``enableReceiveTimestamps()`` is
    /// on, retrying `EINTR`. Descriptors a peer passes along are closed, as a plain `read` discards them.
    ///
    /// - Returns: the datagram's size and time; a count of 0 at end of file.
    /// - Throws: ``Errno`` (`EAGAIN` when nothing is queued).
    public func receiveDatagram(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> ReceivedDatagram {
        let result = clinux_receive_timestamped(self.rawValue, buffer.baseAddress, buffer.count)
        if result.count < 0 { throw Errno(rawValue: result.error) }
        let time: Double? = result.stamped != 0
            ? Double(result.seconds) + Double(result.nanoseconds) / 1_000_000_000 : nil
        return ReceivedDatagram(count: result.count, kernelTime: time, truncated: result.truncated != 0,
                                closedDescriptors: Int(result.closedDescriptors))
    }
}

/// Buffers to receive up to ``capacity`` datagrams with one `recvmmsg(2)`, each with its kernel arrival time
/// (``FileDescriptor/enableReceiveTimestamps()``): where ``FileDescriptor/receiveDatagram(into:)`` needs a system
/// call per datagram and one more to learn that the queue is empty, ``receive(from:)`` reads what is queued, up to
/// ``capacity``, in one.
///
/// Allocated once; receiving allocates nothing. The bytes of datagram `i` stay valid until the next
/// ``receive(from:)``. Not thread-safe: one owner, one thread.
public final class DatagramBatch {
    /// Most datagrams one ``receive(from:)`` takes.
    public let capacity: Int
    /// Bytes kept of each datagram; a longer one is cut and marked ``ReceivedDatagram/truncated``.
    public let slotSize: Int
    let storage: UnsafeMutableRawBufferPointer
    let results: UnsafeMutablePointer<clinux_timestamped_datagram>
    /// Datagrams the last ``receive(from:)`` took.
    public private(set) var received = 0

    /// Sizes the buffers: `capacity` is clamped to 1…16 (`CLINUX_DATAGRAM_BATCH_MAX`), `slotSize` to at least 1.
    public init(capacity: Int, slotSize: Int) {
        self.capacity = min(max(capacity, 1), Int(CLINUX_DATAGRAM_BATCH_MAX))
        self.slotSize = max(slotSize, 1)
        self.storage = UnsafeMutableRawBufferPointer.allocate(byteCount: self.capacity * self.slotSize, alignment: 8)
        self.results = UnsafeMutablePointer<clinux_timestamped_datagram>.allocate(capacity: self.capacity)
        self.results.initialize(repeating: clinux_timestamped_datagram(), count: self.capacity)
    }

    deinit {
        self.storage.deallocate()
        self.results.deallocate()
    }

    /// Receives up to ``capacity`` queued datagrams from `descriptor` without blocking.
    ///
    /// - Returns: how many were received (then ``datagram(_:)`` and ``bytes(_:)`` describe each); 0 when nothing
    ///   was queued. A datagram with ``ReceivedDatagram/count`` 0 is the end of the stream and is the last one.
    /// - Throws: ``Errno`` for anything but an empty queue.
    public func receive(from descriptor: FileDescriptor) throws(Errno) -> Int {
        let count = clinux_receive_timestamped_batch(descriptor.rawValue, self.storage.baseAddress, self.slotSize,
                                                     CUnsignedInt(self.capacity), self.results)
        if count < 0 {
            self.received = 0
            let error = Errno.current
            if error == .wouldBlock { return 0 }
            throw error
        }
        self.received = Int(count)
        return self.received
    }

    /// Datagram `index` (below ``received``) of the last ``receive(from:)``.
    public func datagram(_ index: Int) -> ReceivedDatagram {
        let result = self.results[index]
        let time: Double? = result.stamped != 0
            ? Double(result.seconds) + Double(result.nanoseconds) / 1_000_000_000 : nil
        return ReceivedDatagram(count: result.count, kernelTime: time, truncated: result.truncated != 0,
                                closedDescriptors: Int(result.closedDescriptors))
    }

    /// The bytes datagram `index` left in its slot (at most ``slotSize``).
    public func bytes(_ index: Int) -> UnsafeRawBufferPointer {
        let start = index * self.slotSize
        let count = min(max(self.results[index].count, 0), self.slotSize)
        return UnsafeRawBufferPointer(rebasing: self.storage[start..<(start + count)])
    }
}
