#if canImport(Glibc)
import Glibc
#endif
import CLinux

extension FileDescriptor {
    /// Opens (and with `O_CREAT`, creates) a file, always close-on-exec.
    ///
    /// - Parameters:
    ///   - path: the file.
    ///   - flags: `open(2)` flags, e.g. `O_RDWR | O_CREAT | O_APPEND`; `O_CLOEXEC` is added.
    ///   - mode: the permissions of a created file.
    /// - Throws: ``Errno`` (`ENOENT`, `EACCES`, `ENOSPC`, `EMFILE`, …).
    public static func open(_ path: String, flags: CInt, mode: mode_t = 0o600) throws(Errno) -> FileDescriptor {
        switch retryingOnInterrupt({ clinux_open(path, flags | O_CLOEXEC, mode) }) {
        case .success(let fd): return FileDescriptor(rawValue: fd)
        case .failure(let error): throw error
        }
    }

    /// Opens a directory read-only, for ``sync()`` after a rename or unlink inside it.
    ///
    /// - Throws: ``Errno``.
    public static func openDirectory(_ path: String) throws(Errno) -> FileDescriptor {
        try Self.open(path, flags: O_RDONLY | O_DIRECTORY)
    }

    /// Flushes the file's data and metadata to stable storage (`fsync(2)`).
    ///
    /// - Throws: ``Errno`` (`EIO` when the device failed: the data written since the last successful sync may be
    ///   lost, and the error is reported once).
    public func sync() throws(Errno) {
        switch retryingOnInterrupt({ Glibc.fsync(self.rawValue) }) {
        case .success: return
        case .failure(let error): throw error
        }
    }

    /// Sets the file's length (`ftruncate(2)`): drops a torn tail, or undoes a partial write.
    ///
    /// - Throws: ``Errno``.
    public func truncate(to length: Int) throws(Errno) {
        switch retryingOnInterrupt({ Glibc.ftruncate(self.rawValue, off_t(length)) }) {
        case .success: return
        case .failure(let error): throw error
        }
    }

    /// The file's current size in bytes (`fstat(2)`).
    ///
    /// - Throws: ``Errno``.
    public func size() throws(Errno) -> Int {
        var info = stat()
        switch retryingOnInterrupt({ Glibc.fstat(self.rawValue, &info) }) {
        case .success: return Int(info.st_size)
        case .failure(let error): throw error
        }
    }

    /// Reads up to `buffer.count` bytes at `offset` without moving the file position (`pread(2)`).
    ///
    /// - Returns: the number of bytes read; fewer than asked near end of file, 0 at or past it.
    /// - Throws: ``Errno``.
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(Errno) -> Int {
        switch retryingOnInterrupt({ Glibc.pread(self.rawValue, buffer.baseAddress, buffer.count, off_t(offset)) }) {
        case .success(let count): return count
        case .failure(let error): throw error
        }
    }

    /// Reads until `buffer` is full or end of file, starting at `offset`.
    ///
    /// - Returns: the number of bytes read.
    /// - Throws: ``Errno``.
    public func readFully(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(Errno) -> Int {
        var total = 0
        while total < buffer.count {
            let count = try self.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[total...]),
                                      at: offset + total)
            if count == 0 { break }
            total += count
        }
        return total
    }
}
