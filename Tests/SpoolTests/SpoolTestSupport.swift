#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import Posix
@testable import Spool

/// A fresh directory under /tmp, removed with its files by ``remove()``.
struct TemporaryDirectory {
    let path: String

    init(_ prefix: String = "spool-test") {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.flatMap { mkdtemp($0) } != nil
        }
        self.path = made ? String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
            : "/tmp/\(prefix)-fallback"
    }

    func remove() {
        Self.removeTree(self.path)
    }

    static func removeTree(_ path: String) {
        for name in (try? FileSystem.contentsOfDirectory(path)) ?? [] {
            let child = path + "/" + name
            if FileSystem.isDirectory(child) { Self.removeTree(child) } else { try? FileSystem.removeFile(child) }
        }
        _ = rmdir(path)
    }

    /// The segment files, ascending.
    var segments: [UInt64] { (try? SpoolDirectory.segmentNumbers(in: self.path)) ?? [] }
}

/// A loop on the test's thread plus a spool on it; `pump()` runs the work the writer thread posted.
final class SpoolHarness {
    let loop: EventLoop
    var spool: Spool
    let options: SpoolOptions

    init(_ options: SpoolOptions) throws {
        self.loop = try EventLoop()
        self.options = options
        self.spool = try Spool(options: options, eventLoop: self.loop)
    }

    /// Waits for the writer, then runs everything it posted to the loop.
    func settle() {
        self.spool.synchronize()
        self.pump()
    }

    /// Runs the loop until the work queued so far has run.
    func pump() {
        self.loop.execute { [loop = self.loop] in loop.stop() }
        self.loop.run()
    }

    /// Closes the spool and opens it again, as a restart does.
    func reopen() throws {
        self.spool.close()
        self.pump()
        self.spool = try Spool(options: self.options, eventLoop: self.loop)
    }

    /// Replays until nothing is pending, acknowledging each record when `acknowledge` is true.
    func replayAll(acknowledge: Bool = true) -> [SpoolRecord] {
        var records: [SpoolRecord] = []
        var idle = 0
        while self.spool.pendingReplayCount > 0 && idle < 50 {
            let batch = self.spool.nextForReplay(limit: 10_000, now: .now)
            if batch.isEmpty {
                idle += 1
                self.settle()
            } else {
                idle = 0
            }
            for record in batch {
                records.append(record)
                if acknowledge { self.spool.acknowledge(record.id) }
            }
        }
        return records
    }

    func close() {
        self.spool.close()
        self.pump()
        self.loop.close()
    }
}

extension SpoolOptions {
    /// Options for tests: no rate limit to speak of, no fsync delay.
    static func test(
        _ directory: String,
        maxBytes: Int = 64 << 20,
        segmentBytes: Int = 64 << 10,
        onFull: FullPolicy = .dropOldest
    ) -> SpoolOptions {
        SpoolOptions(
            directory: directory, maxBytes: maxBytes, segmentBytes: segmentBytes, fsyncIntervalMilliseconds: 0,
            onFull: onFull, replayRate: 1_000_000, ringBytes: 1 << 20
        )
    }
}

/// The message for record `index` of a test: its index in text, padded to a size that varies with it.
func testMessage(_ index: Int) -> [UInt8] {
    Array("{\"seq\":\(index),\"v\":[".utf8) + [UInt8](repeating: 0x30 + UInt8(index % 10), count: 20 + index % 50)
        + Array("]}".utf8)
}

/// Reads a file whole.
func contents(_ path: String) -> [UInt8] {
    (try? readFile(atPath: path, limit: 1 << 30)) ?? []
}

/// Replaces a file's contents.
func overwrite(_ path: String, with bytes: [UInt8]) {
    guard let fd = try? FileDescriptor.open(path, flags: O_WRONLY | O_CREAT | O_TRUNC, mode: 0o600) else { return }
    bytes.withUnsafeBytes { _ = try? fd.writeAll($0) }
    fd.close()
}
