#if canImport(Glibc)
import Glibc
#endif
import CLinux

extension FileDescriptor {
    /// Creates a pipe, both ends close-on-exec.
    ///
    /// - Parameter nonBlocking: whether both ends get `O_NONBLOCK` (for use with an event loop).
    /// - Returns: the read end and the write end; the caller closes both.
    /// - Throws: ``Errno`` (`EMFILE` when out of descriptors).
    public static func pipe(
        nonBlocking: Bool = false
    ) throws(Errno) -> (readEnd: FileDescriptor, writeEnd: FileDescriptor) {
        var fds: (CInt, CInt) = (-1, -1)
        let flags = O_CLOEXEC | (nonBlocking ? O_NONBLOCK : 0)
        let result = withUnsafeMutableBytes(of: &fds) { raw in
            clinux_pipe2(raw.baseAddress?.assumingMemoryBound(to: CInt.self), flags)
        }
        if result != 0 { throw Errno.current }
        return (FileDescriptor(rawValue: fds.0), FileDescriptor(rawValue: fds.1))
    }

    /// Creates a connected pair of Unix-domain sockets, both close-on-exec.
    ///
    /// - Parameters:
    ///   - type: `SOCK_STREAM` (default) or `SOCK_SEQPACKET` (one read = one message, as BlueZ's AcquireNotify).
    ///   - nonBlocking: whether both ends get `O_NONBLOCK`.
    /// - Returns: the two ends; the caller closes both.
    /// - Throws: ``Errno``.
    public static func socketPair(
        type: CInt = CInt(SOCK_STREAM.rawValue),
        nonBlocking: Bool = false
    ) throws(Errno) -> (FileDescriptor, FileDescriptor) {
        var fds: (CInt, CInt) = (-1, -1)
        let flags = CInt(SOCK_CLOEXEC.rawValue) | (nonBlocking ? CInt(SOCK_NONBLOCK.rawValue) : 0)
        let result = withUnsafeMutableBytes(of: &fds) { raw in
            Glibc.socketpair(AF_UNIX, type | flags, 0, raw.baseAddress?.assumingMemoryBound(to: CInt.self))
        }
        if result != 0 { throw Errno.current }
        return (FileDescriptor(rawValue: fds.0), FileDescriptor(rawValue: fds.1))
    }

    /// One `write(2)`, retrying on `EINTR`: it may write fewer bytes than given.
    ///
    /// This is the call for non-blocking descriptors on an event loop, where a short write means "wait for
    /// writable"; use ``writeAll(_:)-(UnsafeRawBufferPointer)`` for blocking ones.
    ///
    /// - Returns: the number of bytes written.
    /// - Throws: ``Errno`` (`EAGAIN` when a non-blocking descriptor is full, `EPIPE` when the reader is gone).
    public func write(from bytes: UnsafeRawBufferPointer) throws(Errno) -> Int {
        let result = retryingOnInterrupt { Glibc.write(self.rawValue, bytes.baseAddress, bytes.count) }
        switch result {
        case .success(let count): return count
        case .failure(let error): throw error
        }
    }
}
