import Posix

/// A file descriptor's registration with an ``EventLoop``, returned by
/// ``EventLoop/register(_:interest:handler:)``.
///
/// Each registration has a token that is never reused, so an event that was already collected for a
/// registration that has since been removed (or replaced by a new one for the same descriptor number) is
/// recognised and dropped rather than delivered to the wrong handler.
public struct IORegistration: Hashable, Sendable {
    /// The registered descriptor. The loop never closes it; its owner does, after ``EventLoop/deregister(_:)``.
    public let fileDescriptor: FileDescriptor
    /// The loop's unique token for this registration, carried in `epoll_event.data.u64`.
    let token: UInt64
}
