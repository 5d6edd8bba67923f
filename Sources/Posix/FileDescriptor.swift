#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// An open file descriptor: a thin value over the C `int`, as in swift-system.
///
/// A `FileDescriptor` does not own its descriptor; whoever opened it closes it with ``close()``.
public struct FileDescriptor: RawRepresentable, Hashable, Sendable {
    public let rawValue: CInt

    @inlinable
    public init(rawValue: CInt) { self.rawValue = rawValue }

    public static var standardInput: FileDescriptor { FileDescriptor(rawValue: 0) }
    public static var standardOutput: FileDescriptor { FileDescriptor(rawValue: 1) }
    public static var standardError: FileDescriptor { FileDescriptor(rawValue: 2) }

    /// Opens a file read-only, close-on-exec.
    ///
    /// - Throws: ``Errno`` when the file cannot be opened.
    public static func openReadOnly(_ path: String) throws(Errno) -> FileDescriptor {
        let result = retryingOnInterrupt { clinux_open(path, O_RDONLY | O_CLOEXEC, 0) }
        switch result {
        case .success(let fd): return FileDescriptor(rawValue: fd)
        case .failure(let error): throw error
        }
    }

    /// Reads up to `buffer.count` bytes, retrying on `EINTR`.
    ///
    /// - Returns: the number of bytes read; 0 at end of file.
    /// - Throws: ``Errno`` (`EAGAIN` for a non-blocking descriptor with nothing to read).
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        let result = retryingOnInterrupt { Glibc.read(self.rawValue, buffer.baseAddress, buffer.count) }
        switch result {
        case .success(let count): return count
        case .failure(let error): throw error
        }
    }

    /// Writes all of `bytes`, retrying on `EINTR` and short writes.
    ///
    /// - Throws: ``Errno`` from the first failing `write(2)`.
    public func writeAll(_ bytes: UnsafeRawBufferPointer) throws(Errno) {
        var offset = 0
        while offset < bytes.count {
            let result = retryingOnInterrupt {
                Glibc.write(self.rawValue, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
            }
            switch result {
            case .success(let written): offset += written
            case .failure(let error): throw error
            }
        }
    }

    /// Writes all bytes of a string's UTF-8 form.
    public func writeAll(_ string: String) throws(Errno) {
        let bytes = Array(string.utf8)
        let result: Result<Void, Errno> = bytes.withUnsafeBytes { raw in
            do throws(Errno) {
                try self.writeAll(raw)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }

    /// Reads until end of file.
    ///
    /// - Parameter limit: the most bytes accepted; more is an `EFBIG` error rather than unbounded memory.
    /// - Throws: ``Errno``.
    public func readToEnd(limit: Int = 64 << 20) throws(Errno) -> [UInt8] {
        var bytes: [UInt8] = []
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 16384, alignment: 1)
        defer { chunk.deallocate() }
        while true {
            let count = try self.read(into: chunk)
            if count == 0 { return bytes }
            if bytes.count + count > limit { throw Errno(rawValue: EFBIG) }
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[0..<count]))
        }
    }

    /// Closes the descriptor. `EINTR` from `close(2)` is not retried: on Linux the descriptor is gone either way.
    public func close() {
        _ = Glibc.close(self.rawValue)
    }
}

/// Reads a whole file into memory.
///
/// - Throws: ``Errno`` when it cannot be opened or read (`EISDIR` for a directory).
public func readFile(atPath path: String, limit: Int = 64 << 20) throws(Errno) -> [UInt8] {
    let fd = try FileDescriptor.openReadOnly(path)
    defer { fd.close() }
    return try fd.readToEnd(limit: limit)
}
