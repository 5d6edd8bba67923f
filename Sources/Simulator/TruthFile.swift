#if canImport(Glibc)
import Glibc
#endif
import Posix

/// A buffered, append-only CSV file: rows collect in memory and reach the disk in large writes (on
/// ``flush()``, every 64 KiB and at close), so recording the truth costs no syscall per sample.
final class TruthFile {
    private let descriptor: FileDescriptor
    private var buffer: [UInt8] = []
    private(set) var failed = false

    /// Creates (truncates) `path` and writes `header` as the first line.
    init(path: String, header: String) throws(Errno) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Errno.current }
        self.descriptor = FileDescriptor(rawValue: fd)
        self.buffer.reserveCapacity(1 << 16)
        self.line(header)
    }

    deinit {
        self.flush()
        self.descriptor.close()
    }

    /// Appends one line (a newline is added).
    func line(_ text: String) {
        self.buffer.append(contentsOf: text.utf8)
        self.buffer.append(0x0A)
        if self.buffer.count >= 1 << 16 { self.flush() }
    }

    func flush() {
        guard !self.buffer.isEmpty, !self.failed else { return }
        let ok = self.buffer.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> Bool in
            do throws(Errno) {
                try self.descriptor.writeAll(bytes)
                return true
            } catch {
                return false
            }
        }
        // A full disk must not stop the simulation; the truth is then incomplete, which the log says.
        if !ok { self.failed = true }
        self.buffer.removeAll(keepingCapacity: true)
    }
}
