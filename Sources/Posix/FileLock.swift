#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// An exclusive advisory lock (`flock(2)`) on a file or directory, held until ``release()`` or deinit.
///
/// `flock` locks belong to the open file description, so a second lock on the same path conflicts even inside one
/// process, and the kernel drops the lock when the process ends however it ends: a lock is never stale.
public final class FileLock {
    /// The locked path.
    public let path: String
    private var descriptor: FileDescriptor?

    /// Takes the lock on `path` without waiting.
    ///
    /// - Parameters:
    ///   - path: the file or directory to lock.
    ///   - createFile: create `path` as an empty file (mode 0600) when it is missing; never follows a symbolic
    ///     link. Without it `path` is opened read-only as it is (a directory locks through itself).
    /// - Throws: ``Errno``: `EWOULDBLOCK` (``Errno/wouldBlock``) when another open file holds the lock, or why
    ///   `path` cannot be opened (`ENOENT`, `EACCES`, `ELOOP` for a symbolic link with `createFile`).
    public init(path: String, createFile: Bool) throws(Errno) {
        self.path = path
        let flags = createFile ? O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK : O_RDONLY | O_NONBLOCK
        let fd = try FileDescriptor.open(path, flags: flags, mode: 0o600)
        switch retryingOnInterrupt({ clinux_flock(fd.rawValue, LOCK_EX | LOCK_NB) }) {
        case .success:
            self.descriptor = fd
        case .failure(let error):
            fd.close()
            throw error
        }
    }

    /// Gives the lock up; later calls do nothing.
    public func release() {
        self.descriptor?.close()
        self.descriptor = nil
    }

    deinit {
        self.release()
    }
}
