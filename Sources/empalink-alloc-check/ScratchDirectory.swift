#if canImport(Glibc)
import Glibc
#endif

/// A private directory under `/tmp` for a case's configuration and spool, removed with everything in it when the
/// value goes away. Plain Glibc, like ``MosquittoProcess``.
final class ScratchDirectory {
    let path: String

    /// - Throws: ``CheckError`` when `mkdtemp` fails.
    init(prefix: String = "empalink-alloc") throws(CheckError) {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw CheckError("mkdtemp failed: errno \(errno)") }
        self.path = String(cString: made)
    }

    deinit {
        Self.remove(self.path)
    }

    /// Writes `text` to `name` in the directory and returns the file's path.
    func write(_ name: String, _ text: String) throws(CheckError) -> String {
        let file = self.path + "/" + name
        guard let handle = fopen(file, "w") else { throw CheckError("cannot write \(file): errno \(errno)") }
        fputs(text, handle)
        fclose(handle)
        return file
    }

    /// Removes the directory `path` and everything below it; symbolic links are removed, not followed.
    static func remove(_ path: String) {
        guard let directory = opendir(path) else { return }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw -> String in
                guard let base = raw.bindMemory(to: CChar.self).baseAddress else { return "" }
                return String(cString: base)
            }
            guard !name.isEmpty, name != ".", name != ".." else { continue }
            let child = path + "/" + name
            if entry.pointee.d_type == UInt8(DT_DIR) {
                Self.remove(child)
            } else {
                unlink(child)
            }
        }
        closedir(directory)
        rmdir(path)
    }
}
