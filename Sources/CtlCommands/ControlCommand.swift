#if canImport(Glibc)
import Glibc
#endif
import Agent
import Config
import Posix

/// Talks to a running agent over its control socket: one request line, one JSON line back.
enum ControlClient {
    /// How long the agent has to accept, and then to answer.
    static let replyTimeout = 5

    /// Sends `request`; returns the reply line, or an error message.
    ///
    /// An agent at its client limit closes the connection at once (`EPIPE`, `ECONNRESET`, or a "busy" line): that is
    /// "agent busy". One that accepts but does not answer within ``replyTimeout`` seconds is "no reply". SIGPIPE is
    /// ignored by ``EmpaLinkCtl/main(arguments:)``, so a closed socket is an error here, never a silent exit 141.
    static func send(_ request: String, socketPath: String) -> Result<String, CtlSupport.Message> {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(.init("socket: \(Errno.current)")) }
        defer { Glibc.close(fd) }
        var address = sockaddr_un()
        let bytes = Array(socketPath.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            return .failure(.init("control socket path is too long: \(socketPath)"))
        }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        // SO_SNDTIMEO also bounds connect(2), which blocks while the agent's listen backlog is full.
        var timeout = timeval(tv_sec: self.replyTimeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            let error = Errno.current
            if error == .wouldBlock || error == .inProgress {
                return .failure(.init("agent busy: \(socketPath) did not accept within \(self.replyTimeout) s"))
            }
            return .failure(.init("cannot reach the agent at \(socketPath): \(error) (is empalinkd running?)"))
        }
        let descriptor = FileDescriptor(rawValue: fd)
        var reply: [UInt8] = []
        do throws(Errno) {
            try descriptor.writeAll(request + "\n")
            reply = try descriptor.readToEnd(limit: 1 << 20)
        } catch {
            switch error {
            case .wouldBlock:
                return .failure(.init("no reply within \(self.replyTimeout) s from the agent at \(socketPath)"))
            case .brokenPipe, .connectionReset:
                return .failure(Self.busy(socketPath))
            default:
                return .failure(.init("control socket \(socketPath): \(error)"))
            }
        }
        let line = String(decoding: reply, as: UTF8.self).trimmingNewline()
        guard !line.isEmpty, line != #"{"ok":false,"error":"busy"}"# else { return .failure(Self.busy(socketPath)) }
        return .success(line)
    }

    static func busy(_ socketPath: String) -> CtlSupport.Message {
        .init("agent busy: \(socketPath) closed the connection without a reply (too many control clients); "
                  + "try again")
    }

    /// The socket path: `--socket`, else the configuration's `agent.control_socket`, else the default.
    static func socketPath(_ values: [String: String]) -> Result<String, CtlSupport.ExitCode> {
        if let socket = values["--socket"] { return .success(socket) }
        switch CtlSupport.configuration(path: values["--config"], command: "empalinkctl") {
        case .success(let configuration?): return .success(configuration.agent.controlSocket)
        case .success(nil): return .success("/run/empalink/control.sock")
        case .failure(let exit): return .failure(exit)
        }
    }
}

extension String {
    func trimmingNewline() -> String {
        var text = self
        while text.hasSuffix("\n") { text.removeLast() }
        return text
    }
}

extension ControlClient {
    /// One request line to the running agent, for the commands that only send it: parses `--socket`/`--config`,
    /// prints the reply.
    ///
    /// - Parameters:
    ///   - line: The request line (without the newline).
    ///   - command: The subcommand's name, for messages.
    ///   - arguments: The subcommand's flags.
    ///   - usage: The subcommand's usage line.
    ///   - needsOK: Whether a reply without `"ok":true` is a failure (exit 1).
    /// - Returns: The exit code (SPEC §3): 0, 1 when the agent could not be asked or refused, 2 for bad flags.
    static func request(_ line: String, command: String, arguments: [String], usage: String,
                        needsOK: Bool) -> Int32 {
        let values: [String: String]
        switch CtlSupport.flags(arguments, allowed: ["--socket", "--config"]) {
        case .success(let parsed): values = parsed
        case .failure(let message):
            Console.err("\(command): \(message.text)")
            Console.err("usage: \(usage)")
            return 2
        }
        let path: String
        switch Self.socketPath(values) {
        case .success(let found): path = found
        case .failure(let exit): return exit.code
        }
        switch Self.send(line, socketPath: path) {
        case .success(let reply):
            Console.out(reply)
            return !needsOK || reply.contains("\"ok\":true") ? 0 : 1
        case .failure(let message):
            Console.err("\(command): error: \(message.text)")
            return 1
        }
    }
}

/// `empalinkctl status`: the running agent's live state.
public enum StatusCommand: CtlCommand {
    public static let name = "status"
    public static let summary = "live state of the running agent (devices, Bluetooth, MQTT, metrics) as JSON"
    public static let usage = "empalinkctl status [--socket PATH | --config PATH]"

    public static func run(arguments: [String]) -> Int32 {
        ControlClient.request("status", command: self.name, arguments: arguments, usage: self.usage, needsOK: false)
    }
}

/// `empalinkctl mode background|active`: the same as SIGUSR1 / SIGUSR2. `resume` is the older name of `active`.
public enum ModeCommand: CtlCommand {
    public static let name = "mode"
    public static let summary = "switch the running agent to background (power saving) or active mode"
    public static let usage = "empalinkctl mode background|active|resume [--socket PATH | --config PATH]"

    public static func run(arguments: [String]) -> Int32 {
        guard let mode = arguments.first, ["background", "active", "resume"].contains(mode) else {
            Console.err("mode: expected 'background' or 'active' ('resume' is the same as 'active')")
            Console.err("usage: \(self.usage)")
            return 2
        }
        return ControlClient.request("mode \(mode)", command: self.name, arguments: Array(arguments.dropFirst()),
                                     usage: self.usage, needsOK: true)
    }
}

/// `empalinkctl rescan`: asks the running agent to re-check discovery now (the same as MQTT `{"rescan":true}`).
public enum RescanCommand: CtlCommand {
    public static let name = "rescan"
    public static let summary = "make the running agent re-check discovery now (after waking a wristband)"
    public static let usage = "empalinkctl rescan [--socket PATH | --config PATH]"

    public static func run(arguments: [String]) -> Int32 {
        ControlClient.request("rescan", command: self.name, arguments: arguments, usage: self.usage, needsOK: true)
    }
}

