#if canImport(Glibc)
import Glibc
#endif
import Config
import Consumer
import EventLoop
import Logging
import MQTT
import Posix

/// The options every consumer command shares (SPEC §17): `--host H --port P [--prefix P] [--config FILE]`, and the
/// loop + consumer core they run on.
struct ConsumerSetup {
    var host: String?
    var port: Int?
    var prefix: String?
    var config: String?
    /// Flags without a value (`--once`, `--decimal-comma`, …).
    var switches: Set<String> = []
    /// Other `--flag value` pairs the command allowed.
    var values: [String: String] = [:]

    static let commonUsage = """
          --host H       the MQTT broker (default: mqtt.host of --config, else localhost)
          --port P       its port (default: mqtt.port of --config, else 1883)
          --prefix P     the topic prefix (default: mqtt.topic_prefix of --config, else empalink)
          --config FILE  an empalinkd.toml whose [mqtt] keys (TLS, username, password_file, protocol,
                         keepalive) are used, as the agent uses them
        """

    /// Parses the arguments; `switches` and `valued` name the command's own flags.
    static func parse(_ arguments: [String], switches: Set<String>, valued: Set<String>)
        -> Result<ConsumerSetup, CtlSupport.Message>
    {
        var setup = ConsumerSetup()
        var index = 0
        while index < arguments.count {
            let flag = arguments[index]
            if switches.contains(flag) {
                setup.switches.insert(flag)
                index += 1
                continue
            }
            guard ["--host", "--port", "--prefix", "--config"].contains(flag) || valued.contains(flag) else {
                return .failure(.init("unknown option '\(flag)'"))
            }
            guard index + 1 < arguments.count, !arguments[index + 1].isEmpty else {
                return .failure(.init("\(flag) needs a value"))
            }
            let value = arguments[index + 1]
            switch flag {
            case "--host": setup.host = value
            case "--port":
                guard let port = Int(value), (1...65_535).contains(port) else {
                    return .failure(.init("--port must be 1...65535, got '\(value)'"))
                }
                setup.port = port
            case "--prefix":
                guard !value.contains("+"), !value.contains("#"), !value.hasSuffix("/"), !value.hasPrefix("/") else {
                    return .failure(.init("--prefix must be a topic without wildcards or a leading/trailing '/'"))
                }
                setup.prefix = value
            case "--config": setup.config = value
            default: setup.values[flag] = value
            }
            index += 2
        }
        return .success(setup)
    }

    /// A running consumer: the loop (SIGINT/SIGTERM stop it) and the client, not yet started.
    struct Running {
        var loop: EventLoop
        var client: ConsumerClient
        var logger: Logger
    }

    /// Loads `--config`, builds the MQTT options and the client.
    ///
    /// - Returns: the running parts, or the exit code after printing one line.
    func start(command: String) -> Result<Running, CtlSupport.ExitCode> {
        var mqtt: AgentConfiguration.MQTT?
        if let path = self.config {
            switch CtlSupport.configuration(path: path, command: command) {
            case .success(let configuration): mqtt = configuration?.mqtt
            case .failure(let code): return .failure(code)
            }
        }
        let prefix = self.prefix ?? mqtt?.topicPrefix ?? "empalink"
        let logger = Logger.standard(identifier: "empalinkctl", level: .warn)
        let options: MQTTClient.Options
        do throws(MQTTError) {
            options = try ConsumerMQTTOptions.make(host: self.host, port: self.port, configuration: mqtt,
                                                   clientID: "empalinkctl-\(command)-\(getpid())-\(Self.nonce())")
        } catch {
            Console.err("\(command): error: \(error)")
            return .failure(.init(code: 2))
        }
        do {
            try EventLoop.blockSignals([SIGINT, SIGTERM])
            let loop = try EventLoop()
            try loop.onSignal(SIGINT) { _ in loop.stop() }
            try loop.onSignal(SIGTERM) { _ in loop.stop() }
            let client = try ConsumerClient(options: options, prefix: prefix, loop: loop, logger: logger)
            return .success(Running(loop: loop, client: client, logger: logger))
        } catch {
            Console.err("\(command): error: \(error)")
            return .failure(.init(code: 1))
        }
    }

    /// A few random hex digits, so two consumers started in the same second by the same PID never share an id.
    static func nonce() -> String {
        String(UInt32.random(in: 0...UInt32.max), radix: 16)
    }
}
