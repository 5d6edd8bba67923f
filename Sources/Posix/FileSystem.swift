#if canImport(Glibc)
import Glibc
#endif

/// Filesystem calls on paths, as thin typed wrappers.
public enum FileSystem {
    /// Creates a directory; an existing one is not an error.
    ///
    /// - Throws: ``Errno`` (`EEXIST` when the path exists but is not a directory).
    public static func makeDirectory(_ path: String, mode: mode_t = 0o700) throws(Errno) {
        if Glibc.mkdir(path, mode) == 0 { return }
        let error = Errno.current
        if error == .fileExists, Self.isDirectory(path) { return }
        throw error
    }

    /// Whether `path` names a directory (following symbolic links).
    public static func isDirectory(_ path: String) -> Bool {
        guard let fd = try? FileDescriptor.openDirectory(path) else { return false }
        fd.close()
        return true
    }

    /// Renames `source` to `destination` atomically, replacing it (`rename(2)`).
    ///
    /// - Throws: ``Errno``.
    public static func rename(_ source: String, to destination: String) throws(Errno) {
        if Glibc.rename(source, destination) != 0 { throw Errno.current }
    }

    /// Removes a file (`unlink(2)`).
    ///
    /// - Throws: ``Errno`` (`ENOENT` when it is already gone).
    public static func removeFile(_ path: String) throws(Errno) {
        if Glibc.unlink(path) != 0 { throw Errno.current }
    }

    /// The names in a directory, without "." and "..", in no particular order.
    ///
    /// - Throws: ``Errno`` (`ENOENT`, `ENOTDIR`, `EACCES`).
    public static func contentsOfDirectory(_ path: String) throws(Errno) -> [String] {
        guard let directory = opendir(path) else { throw Errno.current }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Flushes a directory's entries (after a create, rename or unlink) to stable storage.
    ///
    /// - Throws: ``Errno``.
    public static func syncDirectory(_ path: String) throws(Errno) {
        let fd = try FileDescriptor.openDirectory(path)
        defer { fd.close() }
        try fd.sync()
    }
}
