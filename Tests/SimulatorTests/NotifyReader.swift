#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import Posix

/// Packets read from an acquired notification fd, one `recv` per notification.
final class NotifyReader {
    let fd: CInt
    var packets: [[UInt8]] = []
    var hungUp = false
    var registration: IORegistration?
    let loop: EventLoop

    init(fd: CInt, loop: EventLoop) throws {
        self.fd = fd
        self.loop = loop
        self.registration = try loop.register(FileDescriptor(rawValue: fd), interest: [.readable, .readHangup]) {
            [weak self] _ in self?.drain()
        }
    }

    func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(self.fd, $0.baseAddress, $0.count, CInt(MSG_DONTWAIT)) }
            if n > 0 {
                self.packets.append(Array(buffer[0..<n]))
            } else {
                if n == 0 {
                    self.hungUp = true
                    if let registration = self.registration { self.loop.deregister(registration) }
                    self.registration = nil
                }
                return
            }
        }
    }

    func close() {
        if let registration { self.loop.deregister(registration) }
        self.registration = nil
        Glibc.close(self.fd)
    }
}
