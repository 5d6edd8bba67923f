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
