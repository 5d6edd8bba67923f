#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// What `stat(2)` says about a file: its kind and link count, the parts that decide whether it may be trusted.
public struct FileStatus: Equatable, Sendable {
    /// The file's type (`st_mode & S_IFMT`).
    public enum Kind: String, Equatable, Sendable {
        case regular = "regular file"
        case directory
        case symbolicLink = "symbolic link"
        case fifo = "FIFO"
        case socket
        case characterDevice = "character device"
        case blockDevice = "block device"
        case unknown = "file of unknown type"
    }

    public var kind: Kind
    /// Hard links to the file (`st_nlink`).
    public var links: Int
    /// Bytes (`st_size`).
    public var size: Int

    init(_ info: stat) {
        switch info.st_mode & S_IFMT {
        case S_IFREG: self.kind = .regular
        case S_IFDIR: self.kind = .directory
        case S_IFLNK: self.kind = .symbolicLink
        case S_IFIFO: self.kind = .fifo
        case S_IFSOCK: self.kind = .socket
        case S_IFCHR: self.kind = .characterDevice
        case S_IFBLK: self.kind = .blockDevice
        default: self.kind = .unknown
        }
        self.links = Int(info.st_nlink)
        self.size = Int(info.st_size)
    }

    /// The status of `path` itself (`lstat(2)`: a symbolic link is reported as one, not followed), or of what it
    /// names (`stat(2)`) when `following` is true.
    ///
    /// - Throws: ``Errno`` (`ENOENT`, `EACCES` for a component that cannot be searched, `ENOTDIR`).
    public static func of(_ path: String, following: Bool = false) throws(Errno) -> FileStatus {
        var info = stat()
        let result = following ? clinux_stat(path, &info) : Glibc.lstat(path, &info)
        if result != 0 { throw Errno.current }
        return FileStatus(info)
    }
}

extension FileDescriptor {
    /// The status of the open file (`fstat(2)`).
    ///
    /// - Throws: ``Errno``.
    public func status() throws(Errno) -> FileStatus {
        var info = stat()
        switch retryingOnInterrupt({ Glibc.fstat(self.rawValue, &info) }) {
        case .success: return FileStatus(info)
        case .failure(let error): throw error
        }
    }
}
