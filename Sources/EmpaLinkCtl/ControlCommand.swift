#if canImport(Glibc)
import Glibc
#endif
import Agent
import Config
import Posix

/// Talks to a running agent over its control socket: one request line, one JSON line back.
enum ControlClient {
    /// Sends `request`; returns the reply line, or an error message.
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
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            return .failure(.init("cannot reach the agent at \(socketPath): \(Errno.current) (is empalinkd running?)"))
        }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let descriptor = FileDescriptor(rawValue: fd)
        do {
            try descriptor.writeAll(request + "\n")
            let reply = try descriptor.readToEnd(limit: 1 << 20)
            return .success(String(decoding: reply, as: UTF8.self).trimmingNewline())
        } catch {
            return .failure(.init("control socket: \(error)"))
        }
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

/// `empalinkctl status`: the running agent's live state.
public enum StatusCommand: CtlCommand {
    public static let name = "status"
    public static let summary = "live state of the running agent (devices, Bluetooth, MQTT, metrics) as JSON"
    public static let usage = "empalinkctl status [--socket PATH | --config PATH]"

    public static func run(arguments: [String]) -> Int32 {
        let values: [String: String]
        switch CtlSupport.flags(arguments, allowed: ["--socket", "--config"]) {
        case .success(let parsed): values = parsed
        case .failure(let message):
            Console.err("status: \(message.text)")
            Console.err("usage: \(self.usage)")
            return 2
        }
        let path: String
        switch ControlClient.socketPath(values) {
        case .success(let found): path = found
        case .failure(let exit): return exit.code
        }
        switch ControlClient.send("status", socketPath: path) {
        case .success(let reply):
            Console.out(reply)
            return 0
        case .failure(let message):
            Console.err("status: error: \(message.text)")
            return 1
        }
    }
}

/// `empalinkctl mode background|resume`: the same as SIGUSR1 / SIGUSR2.
public enum ModeCommand: CtlCommand {
    public static let name = "mode"
    public static let summary = "switch the running agent to background (power saving) or resume (active) mode"
    public static let usage = "empalinkctl mode background|resume [--socket PATH | --config PATH]"

    public static func run(arguments: [String]) -> Int32 {
        guard let mode = arguments.first, mode == "background" || mode == "resume" else {
            Console.err("mode: expected 'background' or 'resume'")
            Console.err("usage: \(self.usage)")
            return 2
        }
        let values: [String: String]
        switch CtlSupport.flags(Array(arguments.dropFirst()), allowed: ["--socket", "--config"]) {
        case .success(let parsed): values = parsed
        case .failure(let message):
            Console.err("mode: \(message.text)")
            return 2
        }
        let path: String
        switch ControlClient.socketPath(values) {
        case .success(let found): path = found
        case .failure(let exit): return exit.code
        }
        switch ControlClient.send("mode \(mode)", socketPath: path) {
        case .success(let reply):
            Console.out(reply)
            return reply.contains("\"ok\":true") ? 0 : 1
        case .failure(let message):
            Console.err("mode: error: \(message.text)")
            return 1
        }
    }
}
