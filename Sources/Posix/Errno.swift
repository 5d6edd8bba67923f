#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// A POSIX error number, as `errno` reports it.
///
/// Named members cover the codes the agent reacts to; any other code is still representable through
/// ``init(rawValue:)`` and prints with its `strerror` text.
public struct Errno: Error, RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: CInt

    @inlinable
    public init(rawValue: CInt) { self.rawValue = rawValue }

    /// The calling thread's current `errno`.
    public static var current: Errno { Errno(rawValue: clinux_errno()) }

    /// Interrupted system call. The corresponding C error is `EINTR`.
    public static var interrupted: Errno { Errno(rawValue: EINTR) }
    /// Resource temporarily unavailable. The corresponding C error is `EAGAIN`.
    public static var wouldBlock: Errno { Errno(rawValue: EAGAIN) }
    /// No such file or directory. The corresponding C error is `ENOENT`.
    public static var noSuchFileOrDirectory: Errno { Errno(rawValue: ENOENT) }
    /// Permission denied. The corresponding C error is `EACCES`.
    public static var permissionDenied: Errno { Errno(rawValue: EACCES) }
    /// Is a directory. The corresponding C error is `EISDIR`.
    public static var isDirectory: Errno { Errno(rawValue: EISDIR) }
    /// No space left on device. The corresponding C error is `ENOSPC`.
    public static var noSpace: Errno { Errno(rawValue: ENOSPC) }
    /// Input/output error. The corresponding C error is `EIO`.
    public static var ioError: Errno { Errno(rawValue: EIO) }
    /// Bad file descriptor: always a programming error. The corresponding C error is `EBADF`.
    public static var badFileDescriptor: Errno { Errno(rawValue: EBADF) }
    /// Invalid argument. The corresponding C error is `EINVAL`.
    public static var invalidArgument: Errno { Errno(rawValue: EINVAL) }
    /// File exists; for `epoll_ctl`, the descriptor is already registered. The corresponding C error is `EEXIST`.
    public static var fileExists: Errno { Errno(rawValue: EEXIST) }
    /// Operation not permitted; for `epoll_ctl`, the descriptor does not support polling (a regular file).
    /// The corresponding C error is `EPERM`.
    public static var notPermitted: Errno { Errno(rawValue: EPERM) }
    /// Broken pipe: the reading end is closed. The corresponding C error is `EPIPE`.
    public static var brokenPipe: Errno { Errno(rawValue: EPIPE) }
    /// Connection refused. The corresponding C error is `ECONNREFUSED`.
    public static var connectionRefused: Errno { Errno(rawValue: ECONNREFUSED) }
    /// Connection reset by peer. The corresponding C error is `ECONNRESET`.
    public static var connectionReset: Errno { Errno(rawValue: ECONNRESET) }
    /// Socket is not connected. The corresponding C error is `ENOTCONN`.
    public static var notConnected: Errno { Errno(rawValue: ENOTCONN) }
    /// Operation now in progress (a non-blocking `connect`). The corresponding C error is `EINPROGRESS`.
    public static var inProgress: Errno { Errno(rawValue: EINPROGRESS) }
    /// Timed out. The corresponding C error is `ETIMEDOUT`.
    public static var timedOut: Errno { Errno(rawValue: ETIMEDOUT) }
    /// Out of memory. The corresponding C error is `ENOMEM`.
    public static var noMemory: Errno { Errno(rawValue: ENOMEM) }
    /// Too many open files in this process. The corresponding C error is `EMFILE`.
    public static var tooManyOpenFiles: Errno { Errno(rawValue: EMFILE) }
    /// File too large (also: more than a caller's read limit). The corresponding C error is `EFBIG`.
    public static var fileTooLarge: Errno { Errno(rawValue: EFBIG) }
    /// No such entry; for `epoll_ctl`, the descriptor is not registered. The corresponding C error is `ENOENT`.
    public static var noEntry: Errno { Errno(rawValue: ENOENT) }

    /// The system's text for this error, e.g. "No such file or directory".
    public var description: String {
        guard let text = strerror(self.rawValue) else { return "error \(self.rawValue)" }
        return String(cString: text)
    }
}

/// Runs a syscall, retrying while it fails with `EINTR`.
///
/// - Returns: the syscall's non-negative result, or the `Errno` it failed with.
@inlinable
public func retryingOnInterrupt<T: FixedWidthInteger>(_ body: () -> T) -> Result<T, Errno> {
    while true {
        let result = body()
        if result >= 0 { return .success(result) }
        let error = Errno.current
        if error != .interrupted { return .failure(error) }
    }
}
