#if canImport(Glibc)
import Glibc
#endif
import CLinux

/// A joinable POSIX thread running one closure: the event loop's thread, the spool writer, test helpers.
///
/// A plain `pthread` rather than a Swift `Task`, because an event loop blocks in `epoll_wait` for its whole
/// life and must not occupy one of the few threads of the cooperative pool (two on a Raspberry Pi class board).
/// The thread inherits the creating thread's signal mask, which is why ``EventLoop/blockSignals(_:)`` must
/// run before the first thread is spawned.
public final class PosixThread: Sendable {
    /// The thread's `pthread_t`, e.g. for `pthread_kill`.
    public let handle: pthread_t

    private init(handle: pthread_t) {
        self.handle = handle
    }

    /// Starts a thread running `body`.
    ///
    /// - Parameters:
    ///   - name: the thread name shown by `top -H` and in core dumps, truncated to 15 bytes.
    ///   - body: the work; the thread ends when it returns.
    /// - Returns: the thread, to be ``join()``ed exactly once.
    /// - Throws: ``Errno`` (`EAGAIN` when the system is out of threads).
    public static func spawn(name: String? = nil, _ body: @escaping @Sendable () -> Void) throws(Errno) -> PosixThread {
        let box = Unmanaged.passRetained(Box(name: name, body: body))
        var handle = pthread_t()
        let result = pthread_create(&handle, nil, { raw in
            guard let raw else { return nil }
            let box = Unmanaged<Box>.fromOpaque(raw).takeRetainedValue()
            if let name = box.name {
                var bytes = Array(name.utf8.prefix(15))
                bytes.append(0)
                _ = bytes.withUnsafeBufferPointer { buffer in
                    buffer.withMemoryRebound(to: CChar.self) { clinux_set_thread_name($0.baseAddress) }
                }
            }
            box.body()
            return nil
        }, box.toOpaque())
        if result != 0 {
            box.release()
            throw Errno(rawValue: result)
        }
        return PosixThread(handle: handle)
    }

    /// Waits for the thread to finish. Call it once; joining twice is undefined in POSIX.
    public func join() {
        _ = pthread_join(self.handle, nil)
    }

    /// The calling thread's `pthread_t`.
    public static var current: pthread_t { pthread_self() }

    private final class Box {
        let name: String?
        let body: @Sendable () -> Void

        init(name: String?, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
}
