#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import Logging
import Posix

/// The local control socket (`agent.control_socket`): one request line in, one JSON line out, then close.
///
/// The socket is 0600, or 0660 when the process umask leaves group write (the `UMask=0007` drop-in in
/// Docs/operations.md), so it is as private as the agent's user or its group; never open to others.
final class ControlServer {
    let path: String
    let loop: EventLoop
    let logger: Logger
    let handler: (String) -> String
    var listener: FileDescriptor?
    var registration: IORegistration?
    /// The socket file bound here (device, inode): ``close()`` unlinks the path only while it is still ours.
    var bound: (dev_t, ino_t)?
    var clients: [CInt: Client] = [:]
    /// Clients refused or dropped, by cause (``Counters``); in the agent's metrics as `control`.
    private(set) var counters = Counters()
    /// One journal line per cause and burst: a flood of clients must not fill the journal.
    var refusalLog = LogRateLimit(burst: 5, window: .seconds(60))

    /// The most clients served at once; one more is told "busy" and closed.
    static let clientLimit = 16
    /// A client that has not sent its whole line by then is dropped.
    static let clientTimeout: Duration = .seconds(5)
    /// The longest request line; a longer one is answered with an error and the client closed.
    static let lineLimit = 1024

    final class Client {
        let fd: FileDescriptor
        var registration: IORegistration?
        var timer: TimerHandle?
        var input: [UInt8] = []
        init(fd: FileDescriptor) { self.fd = fd }
    }

    /// Binds and listens on `path` and serves it on `loop`.
    ///
    /// - Throws: a one-line ``AgentError`` naming the socket and the cause (the path is too long, taken by a
    ///   running agent or by something that is not a socket, `bind`/`listen` failed, the loop refused it).
    init(path: String, loop: EventLoop, logger: Logger, handler: @escaping (String) -> String) throws(AgentError) {
        self.path = path
        self.loop = loop
        self.logger = logger
        self.handler = handler
        try self.listen()
    }

    func listen() throws(AgentError) {
        let bytes = Array(self.path.utf8)
        var address = sockaddr_un()
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw AgentError("control socket path \(self.path) is too long")
        }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        // The directory (RuntimeDirectory under systemd) must exist; a stale socket from a crash is replaced.
        if let slash = self.path.lastIndex(of: "/"), slash != self.path.startIndex {
            _ = mkdir(String(self.path[..<slash]), 0o755)
        }
        try self.removeStaleSocket(address)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
                            | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else {
            throw AgentError("control socket \(self.path): \(Errno.current)")
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        // bind(2) creates the file 0777 & ~umask; keep owner read/write, and group read/write only when the umask
        // grants group write. No one can connect before listen(2), so the moment between bind and chmod is safe.
        var info = stat()
        guard bound == 0, lstat(self.path, &info) == 0,
              chmod(self.path, info.st_mode & 0o020 != 0 ? 0o660 : 0o600) == 0,
              Glibc.listen(fd, 8) == 0
        else {
            let error = Errno.current
            Glibc.close(fd)
            throw AgentError("control socket \(self.path): \(error)")
        }
        self.bound = (info.st_dev, info.st_ino)
        let listener = FileDescriptor(rawValue: fd)
        self.listener = listener
        do throws(Errno) {
            self.registration = try self.loop.register(listener, interest: .readable) { [weak self] _ in
                self?.accept()
            }
        } catch {
            // Bound but never served, `empalinkctl` would wait for nothing: undo the socket and refuse.
            self.close()
            throw AgentError("control socket \(self.path): cannot watch it on the event loop: \(error)")
        }
    }

    /// Unlinks a socket left by an agent that is gone; refuses a socket that answers (another agent runs on it) and
    /// a path that is not a socket.
    ///
    /// - Throws: ``AgentError`` when the path is not free to bind.
    func removeStaleSocket(_ address: sockaddr_un) throws(AgentError) {
        var info = stat()
        guard lstat(self.path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            throw AgentError("control socket \(self.path) exists and is not a socket; not replacing it")
        }
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
                               | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard probe >= 0 else {
            throw AgentError("control socket \(self.path): \(Errno.current)")
        }
        defer { Glibc.close(probe) }
        var address = address
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(probe, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        // ECONNREFUSED: nobody listens, a stale socket. Success or EAGAIN (a full backlog): an agent is serving it.
        // Anything else (EACCES: another user's socket) cannot tell, so the socket is left alone too.
        let error = connected == 0 ? nil : Errno.current
        switch error {
        case .connectionRefused?:
            break
        case nil, .wouldBlock?:
            throw AgentError("control socket \(self.path) is in use by a running agent (another empalinkd on "
                                 + "this configuration?); not replacing it")
        case let other?:
            throw AgentError("control socket \(self.path) exists and cannot be checked (\(other)); not replacing it")
        }
        unlink(self.path)
    }

    func accept() {
        guard let listener = self.listener else { return }
        while true {
            let fd = Glibc.accept(listener.rawValue, nil, nil)
            guard fd >= 0 else { return }
            guard self.clients.count < Self.clientLimit else {
                // Best effort: empalinkctl reports "agent busy" with or without this line.
                try? FileDescriptor(rawValue: fd).setNonBlocking(true)
                _ = try? FileDescriptor(rawValue: fd).writeAll("{\"ok\":false,\"error\":\"busy\"}\n")
                Glibc.close(fd)
                self.counters.busy &+= 1
                self.logRefusal("busy: \(Self.clientLimit) clients are being served")
                continue
            }
            let client = Client(fd: FileDescriptor(rawValue: fd))
            do throws(Errno) {
                // A blocking client socket would stall the loop on its read: not served.
                try client.fd.setNonBlocking(true)
                try client.fd.setCloseOnExec(true)
                client.registration = try self.loop.register(client.fd, interest: .readable) { [weak self] events in
                    self?.read(client, events)
                }
            } catch {
                self.logger.warn("control socket: cannot serve a client: \(error)")
                Glibc.close(fd)
                continue
            }
            self.clients[fd] = client
            // A client that never finishes its line is dropped; the timer is cancelled when it is served.
            client.timer = try? self.loop.scheduleTimer(after: Self.clientTimeout) { [weak self, weak client] in
                guard let self, let client, self.clients[client.fd.rawValue] === client else { return }
                self.counters.timeouts &+= 1
                self.logRefusal("no request line within \(Self.clientTimeout)")
                self.refuse(client, "timed out waiting for a request line")
            }
        }
    }

    func read(_ client: Client, _ events: IOEvents) {
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(client.fd.rawValue, $0.baseAddress, $0.count) }
        if count > 0 {
            client.input += buffer[0..<count]
        }
        if let newline = client.input.prefix(Self.lineLimit + 1).firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: client.input[..<newline], as: UTF8.self)
            let reply = self.handler(line.trimmingCharacters(in: [" ", "\r", "\t"])) + "\n"
            self.counters.requests &+= 1
            try? client.fd.writeAll(reply)
            self.drop(client)
        } else if client.input.count > Self.lineLimit {
            // Answered, so that a client (or a person typing into socat) learns why it is closed.
            self.counters.overlong &+= 1
            self.logRefusal("a request line longer than \(Self.lineLimit) bytes")
            self.refuse(client, "request line longer than \(Self.lineLimit) bytes")
        } else if count == 0 || !events.isDisjoint(with: [.hangup, .error]) {
            self.counters.abandoned &+= 1
            self.drop(client)
        }
    }

    /// Answers `client` with an error line (best effort: it may not read) and closes it.
    func refuse(_ client: Client, _ error: String) {
        try? client.fd.writeAll("{\"ok\":false,\"error\":\"\(error)\"}\n")
        self.drop(client)
    }

    /// A refused client, in the journal at most ``refusalLog``'s burst a minute.
    func logRefusal(_ reason: String) {
        guard let skipped = self.refusalLog.admit() else { return }
        let more = skipped > 0 ? " (\(skipped) more refusals not logged)" : ""
        self.logger.warn("control socket: refused a client: \(reason)\(more)")
    }

    /// Closes `client` and cancels its timer. A descriptor number is reused by the next accept, so only the very
    /// client registered under it is removed.
    func drop(_ client: Client) {
        guard let registered = self.clients[client.fd.rawValue], registered === client else { return }
        self.clients.removeValue(forKey: client.fd.rawValue)
        if let timer = client.timer { self.loop.cancel(timer) }
        client.timer = nil
        if let registration = client.registration { self.loop.deregister(registration) }
        client.fd.close()
    }

    func close() {
        for client in Array(self.clients.values) { self.drop(client) }
        if let registration = self.registration { self.loop.deregister(registration) }
        if let listener = self.listener {
            listener.close()
            // Only our own socket: after a replacement (an operator's rm and a new agent) the path is not ours.
            var info = stat()
            if let bound = self.bound, lstat(self.path, &info) == 0, info.st_dev == bound.0, info.st_ino == bound.1 {
                unlink(self.path)
            }
        }
        self.listener = nil
    }
}
