#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import Logging
import Posix

/// The local control socket (`agent.control_socket`): one request line in, one JSON line out, then close.
/// Owner-only permissions (0600) make it as private as the agent's user.
final class ControlServer {
    let path: String
    let loop: EventLoop
    let logger: Logger
    let handler: (String) -> String
    var listener: FileDescriptor?
    var registration: IORegistration?
    var clients: [CInt: Client] = [:]

    final class Client {
        let fd: FileDescriptor
        var registration: IORegistration?
        var input: [UInt8] = []
        init(fd: FileDescriptor) { self.fd = fd }
    }

    init?(path: String, loop: EventLoop, logger: Logger, handler: @escaping (String) -> String) {
        self.path = path
        self.loop = loop
        self.logger = logger
        self.handler = handler
        guard self.listen() else { return nil }
    }

    func listen() -> Bool {
        let bytes = Array(self.path.utf8)
        var address = sockaddr_un()
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            self.logger.error("control socket path \(self.path) is too long")
            return false
        }
        // The directory (RuntimeDirectory under systemd) must exist; a stale socket from a crash is replaced.
        if let slash = self.path.lastIndex(of: "/"), slash != self.path.startIndex {
            _ = mkdir(String(self.path[..<slash]), 0o755)
        }
        unlink(self.path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else {
            self.logger.error("control socket: \(Errno.current)")
            return false
        }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, chmod(self.path, 0o600) == 0, Glibc.listen(fd, 8) == 0 else {
            self.logger.error("control socket \(self.path): \(Errno.current)")
            Glibc.close(fd)
            return false
        }
        let listener = FileDescriptor(rawValue: fd)
        self.listener = listener
        self.registration = try? self.loop.register(listener, interest: .readable) { [weak self] _ in self?.accept() }
        return true
    }

    func accept() {
        guard let listener = self.listener else { return }
        while true {
            let fd = Glibc.accept(listener.rawValue, nil, nil)
            guard fd >= 0 else { return }
            guard self.clients.count < 16 else {
                Glibc.close(fd)
                continue
            }
            let client = Client(fd: FileDescriptor(rawValue: fd))
            try? client.fd.setNonBlocking(true)
            try? client.fd.setCloseOnExec(true)
            client.registration = try? self.loop.register(client.fd, interest: .readable) { [weak self] events in
                self?.read(client, events)
            }
            if client.registration == nil {
                Glibc.close(fd)
                continue
            }
            self.clients[fd] = client
            // A client that never finishes its line is dropped.
            _ = try? self.loop.scheduleTimer(after: .seconds(5)) { [weak self] in self?.drop(client) }
        }
    }

    func read(_ client: Client, _ events: IOEvents) {
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(client.fd.rawValue, $0.baseAddress, $0.count) }
        if count > 0 {
            client.input += buffer[0..<count]
        }
        if let newline = client.input.firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: client.input[..<newline], as: UTF8.self)
            let reply = self.handler(line.trimmingCharacters(in: [" ", "\r", "\t"])) + "\n"
            try? client.fd.writeAll(reply)
            self.drop(client)
        } else if count == 0 || client.input.count > 1024 || !events.isDisjoint(with: [.hangup, .error]) {
            self.drop(client)
        }
    }

    func drop(_ client: Client) {
        guard self.clients.removeValue(forKey: client.fd.rawValue) != nil else { return }
        if let registration = client.registration { self.loop.deregister(registration) }
        client.fd.close()
    }

    func close() {
        for client in Array(self.clients.values) { self.drop(client) }
        if let registration = self.registration { self.loop.deregister(registration) }
        if let listener = self.listener {
            listener.close()
            unlink(self.path)
        }
        self.listener = nil
    }
}
