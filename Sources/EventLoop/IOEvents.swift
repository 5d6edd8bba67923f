import CLinux

/// Readiness of a file descriptor, as `epoll` reports it; also the interest passed to
/// ``EventLoop/register(_:interest:handler:)``.
///
/// Only ``readable`` and ``writable`` (and ``readHangup``) are meaningful as interest. ``hangup`` and
/// ``error`` are always reported, whatever the interest: the loop is level-triggered, so a handler that sees
/// either must close or deregister its descriptor, or it will be called again at once.
public struct IOEvents: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32

    @inlinable
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Data can be read without blocking, or the peer closed (a read returns 0). `EPOLLIN`.
    public static let readable = IOEvents(rawValue: CLINUX_EPOLLIN)
    /// Data can be written without blocking. `EPOLLOUT`.
    public static let writable = IOEvents(rawValue: CLINUX_EPOLLOUT)
    /// The peer closed its writing side (stream sockets; requested automatically with ``readable``).
    /// `EPOLLRDHUP`.
    public static let readHangup = IOEvents(rawValue: CLINUX_EPOLLRDHUP)
    /// Both directions are closed: the last writer of a pipe went away, or a socket's peer closed.
    /// `EPOLLHUP`; always reported.
    public static let hangup = IOEvents(rawValue: CLINUX_EPOLLHUP)
    /// An error is pending on the descriptor (e.g. a refused non-blocking connect, or the reader of a pipe
    /// is gone). `EPOLLERR`; always reported.
    public static let error = IOEvents(rawValue: CLINUX_EPOLLERR)

    /// Every bit this type knows; other `epoll` bits are dropped before a handler sees them.
    static let known: IOEvents = [.readable, .writable, .readHangup, .hangup, .error]

    /// The `epoll_ctl` event mask for this interest.
    var epollInterest: UInt32 {
        var bits = self.rawValue & (CLINUX_EPOLLIN | CLINUX_EPOLLOUT | CLINUX_EPOLLRDHUP)
        if self.contains(.readable) { bits |= CLINUX_EPOLLRDHUP }
        return bits
    }

    public var description: String {
        var names: [String] = []
        if self.contains(.readable) { names.append("readable") }
        if self.contains(.writable) { names.append("writable") }
        if self.contains(.readHangup) { names.append("readHangup") }
        if self.contains(.hangup) { names.append("hangup") }
        if self.contains(.error) { names.append("error") }
        return "[" + names.joined(separator: ", ") + "]"
    }
}
