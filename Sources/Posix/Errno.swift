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
