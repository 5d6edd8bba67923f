#if canImport(Glibc)
import Glibc
#endif
import Posix
import Synchronization
import Testing

@testable import EventLoop

/// A value shared between a test's threads.
final class Shared<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) {
        self.mutex = Mutex(value)
    }

    func withLock<R>(_ body: (inout Value) -> R) -> R {
        self.mutex.withLock { body(&$0) }
    }

    var value: Value { self.mutex.withLock { $0 } }
}

/// Sleeps the calling (helper) thread; tests use it only to let the loop go idle first, never to assert timing.
func sleepMilliseconds(_ milliseconds: UInt32) {
    usleep(milliseconds * 1000)
}

/// Writes a string to a descriptor, failing the test on error.
func write(_ text: String, to fd: FileDescriptor, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(throws: Never.self, sourceLocation: sourceLocation) { try fd.writeAll(text) }
}

/// Reads what is available from a non-blocking descriptor as a string ("" at end of file).
func readAvailable(_ fd: FileDescriptor) throws -> String {
    var bytes = [UInt8](repeating: 0, count: 4096)
    let count = try bytes.withUnsafeMutableBytes { try fd.read(into: $0) }
    return String(decoding: bytes[0..<count], as: UTF8.self)
}
