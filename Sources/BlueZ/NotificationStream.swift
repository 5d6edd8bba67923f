#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import Posix

/// Reads GATT notifications from an `AcquireNotify` socket on the event loop: one `read` is one notification.
///
/// The receive buffer is allocated once; each notification is lent to ``onNotification`` as a borrowed view,
/// so the steady state allocates nothing here. A hang-up, error or end of file means the link or BlueZ dropped
/// the socket: the stream closes itself and calls ``onClose`` once.
public final class NotificationStream {
    public let fileDescriptor: FileDescriptor
    let loop: EventLoop
    var registration: IORegistration?
    let buffer: UnsafeMutableRawBufferPointer

    /// Called for each notification; the bytes are valid only during the call.
    public var onNotification: ((UnsafeRawBufferPointer) -> Void)?
    /// Called once when the socket closes (peer hang-up, error, or ``close()``).
    public var onClose: ((Errno?) -> Void)?
    public private(set) var isOpen = true
    /// Notifications read, for metrics.
    public private(set) var count: UInt64 = 0

    /// Most notifications read per wake-up, so one busy stream cannot starve the others.
    static let readsPerWakeup = 16

    /// Starts reading `fd` (non-blocking; the stream owns and closes it).
    ///
    /// - Parameter mtu: the ATT MTU from `AcquireNotify`; the buffer is sized to hold any notification.
    public init(fileDescriptor: FileDescriptor, mtu: Int, loop: EventLoop) throws(Errno) {
        self.fileDescriptor = fileDescriptor
        self.loop = loop
        self.buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(mtu, 23) + 1, alignment: 8)
        do {
            self.registration = try loop.register(fileDescriptor, interest: .readable) { [weak self] events in
                self?.ready(events)
            }
        } catch {
            self.buffer.deallocate()
            fileDescriptor.close()
            throw error
        }
    }

    deinit {
        if self.isOpen {
            if let registration = self.registration { self.loop.deregister(registration) }
            self.fileDescriptor.close()
        }
        self.buffer.deallocate()
    }

    func ready(_ events: IOEvents) {
        var reads = 0
        while self.isOpen, reads < NotificationStream.readsPerWakeup {
            let count: Int
            do {
                count = try self.fileDescriptor.read(into: self.buffer)
            } catch {
                if error == .wouldBlock { break }
                self.finish(error)
                return
            }
            if count == 0 {
                self.finish(nil)
                return
            }
            reads += 1
            self.count &+= 1
            self.onNotification?(UnsafeRawBufferPointer(rebasing: self.buffer[0..<count]))
        }
        // Data is read before a hang-up is honoured, so the last notifications are not lost.
        if self.isOpen, reads < NotificationStream.readsPerWakeup,
           !events.isDisjoint(with: [.hangup, .error, .readHangup]) {
            self.finish(nil)
        }
    }

    func finish(_ error: Errno?) {
        guard self.isOpen else { return }
        self.isOpen = false
        if let registration = self.registration { self.loop.deregister(registration) }
        self.registration = nil
        self.fileDescriptor.close()
        let handler = self.onClose
        self.onClose = nil
        handler?(error)
    }

    /// Stops reading and closes the socket (BlueZ then stops the notifications).
    public func close() {
        self.finish(nil)
    }
}
