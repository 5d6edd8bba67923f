#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import Logging
import Posix

/// The TCP face of `e4-server` (SPEC §17.2): many connections on the loop, each an ``E4ProtocolSession`` with a
/// bounded input line and a bounded output queue. A client that sends a line longer than ``lineLimit`` or lets its
/// output queue pass ``outputLimit`` (it does not read) is closed and counted; the others never wait for it.
public final class E4StreamingServer {
    public struct Options: Sendable {
        public var host = "127.0.0.1"
        public var port = 28000
        public var decimalComma = false
        public var systemMessages = true
        /// List heart-rate straps and other non-E4 devices too (SPEC §16; default: E4s only).
        public var allDevices = false
        public init() {}
    }

    /// Drop and connection counters, reported when the server stops.
    public struct Counters: Equatable, Sendable, CustomStringConvertible {
        public var accepted = 0
        public var refusedOverLimit = 0
        public var closedLongLine = 0
        public var closedSlow = 0
        public var commands = 0
        public var dataLines = 0
        public var description: String {
            "accepted=\(self.accepted) refused_over_limit=\(self.refusedOverLimit) "
                + "closed_long_line=\(self.closedLongLine) closed_slow=\(self.closedSlow) commands=\(self.commands) "
                + "data_lines=\(self.dataLines)"
        }
    }

    /// A line without `\n` longer than this closes the connection.
    public static let lineLimit = 4096
    /// Queued output beyond this closes the connection (a client that does not read).
    public static let outputLimit = 1 << 20
    public static let clientLimit = 512

    let options: Options
    let loop: EventLoop
    let logger: Logger
    public private(set) var directory = E4Directory()
    public private(set) var counters = Counters()
    var listener: FileDescriptor?
    var registration: IORegistration?
    var clients: [CInt: Client] = [:]

    final class Client {
        let fd: FileDescriptor
        var registration: IORegistration?
        var session = E4ProtocolSession()
        var input: [UInt8] = []
        var output: [UInt8] = []
        var outputStart = 0
        var closeAfterFlush = false
        var queued: Int { self.output.count - self.outputStart }
        init(fd: FileDescriptor) { self.fd = fd }
    }

    /// Binds and listens.
    ///
    /// - Throws: ``Errno`` for an address that is not an IPv4 literal (`EINVAL`) or cannot be bound (`EADDRINUSE`).
    public init(options: Options, loop: EventLoop, logger: Logger) throws(Errno) {
        self.options = options
        self.directory = E4Directory(includesOtherProfiles: options.allDevices)
        self.loop = loop
        self.logger = logger
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(truncatingIfNeeded: options.port).bigEndian)
        guard inet_pton(AF_INET, options.host, &address.sin_addr) == 1 else { throw Errno.invalidArgument }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
                            | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw Errno.current }
        var one: CInt = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<CInt>.size))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(fd, 256) == 0 else {
            let error = Errno.current
            Glibc.close(fd)
            throw error
        }
        let listener = FileDescriptor(rawValue: fd)
        self.listener = listener
        do {
            self.registration = try loop.register(listener, interest: .readable) { [weak self] _ in self?.accept() }
        } catch {
            listener.close()
            throw error
        }
    }

    public var clientCount: Int { self.clients.count }

    // MARK: the broker side

    /// Takes one consumer event: directory updates, data to subscribed connections, system lines.
    public func handle(_ event: ConsumerEvent) {
        switch event {
        case .devices(_, let devices):
            self.directory.seen(devices)
        case .deviceStatus(let board, let device, let state):
            if let level = state.battery, self.battery[E4Directory.id(of: device)] == nil {
                self.battery[E4Directory.id(of: device)] = DataMessage(
                    stream: .battery, sid: state.sid ?? "status", seq: 0,
                    // The status carries no reading time: the time it reached us.
                    events: [DataMessage.Event(time: Self.wallClock(), value: level)])
            }
            guard let change = self.directory.status(state, board: board, serial: device) else { return }
            let id = E4Directory.id(of: device)
            if change {
                if self.lost.remove(id) != nil { self.system("R connection re-established to device \(id)\n", to: id) }
            } else {
                self.lost.insert(id)
                self.system("R connection lost to device \(id)\n", to: id)
            }
        case .agentStatus(let board, let online):
            if !online {
                for (id, _) in self.directory.boardOffline(board) {
                    self.system("R connection lost to device \(id)\n", to: id)
                    self.lost.insert(id)
                }
            }
        case .data(_, let device, let message):
            if message.stream == .battery, let last = message.events.last {
                self.battery[E4Directory.id(of: device)] = DataMessage(stream: .battery, sid: message.sid,
                                                                       seq: message.seq, events: [last])
            }
            guard let subscription = E4Subscription(message.stream) else { return }
            let id = E4Directory.id(of: device)
            var plain: [UInt8]?
            var comma: [UInt8]?
            for client in self.clients.values where client.session.wants(subscription, from: id) {
                let bytes: [UInt8]
                if self.options.decimalComma {
                    if comma == nil { comma = Array(E4DataLines.text(message, decimalComma: true).utf8) }
                    bytes = comma ?? []
                } else {
                    if plain == nil { plain = Array(E4DataLines.text(message).utf8) }
                    bytes = plain ?? []
                }
                self.counters.dataLines += message.stream == .ibi ? message.count * 2 : message.count
                self.send(bytes, to: client)
            }
        case .broker, .metrics, .gap:
            break
        }
    }

    /// The latest battery reading per E4 id (from the `battery` stream, or a wristband status).
    var battery: [String: DataMessage] = [:]

    /// Wristbands whose connection was reported lost, for the "re-established" line.
    var lost: Set<String> = []

    func system(_ line: String, to id: String) {
        guard self.options.systemMessages else { return }
        let bytes = Array(line.utf8)
        for client in self.clients.values where client.session.device == id { self.send(bytes, to: client) }
    }

    // MARK: connections

    func accept() {
        guard let listener = self.listener else { return }
        while true {
            let fd = Glibc.accept(listener.rawValue, nil, nil)
            guard fd >= 0 else { return }
            try? FileDescriptor(rawValue: fd).setNonBlocking(true)
            try? FileDescriptor(rawValue: fd).setCloseOnExec(true)
            guard self.clients.count < Self.clientLimit else {
                self.counters.refusedOverLimit += 1
                Glibc.close(fd)
                continue
            }
            let client = Client(fd: FileDescriptor(rawValue: fd))
            do {
                client.registration = try self.loop.register(client.fd, interest: .readable) {
                    [weak self, weak client] events in
                    if let self, let client { self.ready(client, events) }
                }
            } catch {
                Glibc.close(fd)
                continue
            }
            self.counters.accepted += 1
            self.clients[fd] = client
        }
    }

    func ready(_ client: Client, _ events: IOEvents) {
        if events.contains(.writable) { self.flush(client) }
        guard self.clients[client.fd.rawValue] === client else { return }
        if events.contains(.readable) || !events.isDisjoint(with: [.hangup, .error, .readHangup]) { self.read(client) }
    }

    func read(_ client: Client) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        // A bounded number of reads per wake-up, so one client cannot hold the loop.
        for _ in 0..<16 {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(client.fd.rawValue, $0.baseAddress, $0.count) }
            if count == 0 {
                self.drop(client)
                return
            }
            if count < 0 {
                if errno == EAGAIN || errno == EINTR { return }
                self.drop(client)
                return
            }
            client.input += buffer[0..<count]
            while let newline = client.input.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: client.input[..<newline], as: UTF8.self)
                client.input.removeSubrange(...newline)
                self.counters.commands += 1
                let reply = client.session.handle(line, directory: self.directory)
                if let text = reply.line { self.send(Array((text + "\n").utf8), to: client) }
                if reply.subscribed == .bat, let id = client.session.device, let battery = self.battery[id],
                   !client.session.paused
                {
                    self.send(Array(E4DataLines.text(battery, decimalComma: self.options.decimalComma).utf8), to: client)
                }
                guard self.clients[client.fd.rawValue] === client else { return }
                if reply.close {
                    client.closeAfterFlush = true
                    self.flush(client)
                    return
                }
            }
            if client.input.count > Self.lineLimit {
                self.counters.closedLongLine += 1
                self.logger.warn("e4-server: closed a client that sent \(client.input.count) bytes without a newline")
                self.drop(client)
                return
            }
        }
    }

    func send(_ bytes: [UInt8], to client: Client) {
        guard !client.closeAfterFlush else { return }
        if client.queued + bytes.count > Self.outputLimit {
            self.counters.closedSlow += 1
            self.logger.warn("e4-server: closed a client that fell \(client.queued) bytes behind")
            self.drop(client)
            return
        }
        client.output += bytes
        self.flush(client)
    }

    func flush(_ client: Client) {
        while client.queued > 0 {
            let written = client.output.withUnsafeBytes { raw in
                Glibc.send(client.fd.rawValue, raw.baseAddress.map { $0 + client.outputStart }, client.queued,
                           Int32(MSG_NOSIGNAL))
            }
            if written < 0 {
                if errno == EAGAIN || errno == EINTR { break }
                self.drop(client)
                return
            }
            client.outputStart += written
        }
        if client.queued == 0 {
            client.output.removeAll(keepingCapacity: client.output.capacity <= 65_536)
            client.outputStart = 0
            if client.closeAfterFlush {
                shutdown(client.fd.rawValue, Int32(SHUT_WR))
                self.drop(client)
                return
            }
        } else if client.outputStart > 65_536 {
            client.output.removeSubrange(0..<client.outputStart)
            client.outputStart = 0
        }
        if let registration = client.registration {
            try? self.loop.reregister(registration, interest: client.queued > 0 ? [.readable, .writable] : .readable)
        }
    }

    func drop(_ client: Client) {
        guard self.clients[client.fd.rawValue] === client else { return }
        self.clients.removeValue(forKey: client.fd.rawValue)
        if let registration = client.registration { self.loop.deregister(registration) }
        client.registration = nil
        client.fd.close()
    }

    /// Seconds since 1970 now.
    static func wallClock() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// Closes every connection and the listener.
    public func close() {
        for client in Array(self.clients.values) { self.drop(client) }
        if let registration = self.registration { self.loop.deregister(registration) }
        self.registration = nil
        self.listener?.close()
        self.listener = nil
    }
}
