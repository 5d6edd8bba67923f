import Config
import EventLoop
import Logging
import Posix

/// `empalinkd`'s command line (SPEC §3).
public enum DaemonCommand {
    static let usage = """
        usage: empalinkd [--config PATH]
               empalinkd --check-config [--config PATH] [--json]
               empalinkd --version | --help

        options:
          --config PATH    configuration file (default \(ConfigurationLoader.defaultPath))
          --check-config   validate the configuration and the files it names (API key, keyring, MQTT
                           password, TLS certificates) and exit: 0 valid, 2 invalid (errors on stderr as
                           PATH:LINE:COL: error: MESSAGE; warnings, such as nothing to connect, as
                           PATH: warning: MESSAGE, do not fail)
          --json           with --check-config: print the full defaulted configuration as JSON
          --version        print the version
          --help           print this help
        """

    /// The parsed command line.
    struct Options: Equatable {
        var configPath = ConfigurationLoader.defaultPath
        var checkConfig = false
        var json = false
        var version = false
        var help = false
    }

    /// Parses `arguments` (without the program name).
    ///
    /// - Returns: the options, or a one-line usage error.
    static func parse(_ arguments: [String]) -> Result<Options, UsageError> {
        var options = Options()
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--config", "-c":
                guard index + 1 < arguments.count else { return .failure(UsageError("\(argument) needs a PATH")) }
                options.configPath = arguments[index + 1]
                index += 1
            case "--check-config": options.checkConfig = true
            case "--json": options.json = true
            case "--version": options.version = true
            case "--help", "-h": options.help = true
            default:
                if argument.hasPrefix("--config=") {
                    options.configPath = String(argument.dropFirst("--config=".count))
                } else {
                    return .failure(UsageError("unknown option '\(argument)'"))
                }
            }
            index += 1
        }
        if options.json && !options.checkConfig {
            return .failure(UsageError("--json only goes with --check-config"))
        }
        if options.configPath.isEmpty {
            return .failure(UsageError("--config needs a non-empty PATH"))
        }
        return .success(options)
    }

    struct UsageError: Error, Equatable {
        var message: String
        init(_ message: String) { self.message = message }
    }

    /// Runs `empalinkd` with `arguments` (without the program name).
    ///
    /// - Returns: the exit code: 0 ok, 1 runtime failure, 2 usage or configuration error.
    public static func main(arguments: [String]) -> Int32 {
        let options: Options
        switch self.parse(arguments) {
        case .success(let parsed): options = parsed
        case .failure(let error):
            Console.err("empalinkd: \(error.message)")
            Console.err(self.usage)
            return 2
        }
        if options.help {
            Console.out(self.usage)
            return 0
        }
        if options.version {
            Console.out("empalinkd \(Version.string)")
            return 0
        }
        let configuration: AgentConfiguration
        do {
            configuration = try ConfigurationLoader.load(path: options.configPath)
        } catch {
            for diagnostic in error.diagnostics {
                Console.err(diagnostic.formatted(path: options.configPath))
            }
            return 2
        }
        // The same checks at start as with --check-config: a file that cannot be read is a configuration error
        // (exit 2, not restarted by the unit), not a runtime failure to retry every 5 s.
        let findings = ConfigurationCheck.run(configuration)
        let errors = findings.filter { $0.severity == .error }
        // One line per error when it fails (SPEC §3); the warnings when it passes.
        if !errors.isEmpty {
            for error in errors { Console.err(error.formatted(path: options.configPath)) }
            return 2
        }
        if options.checkConfig {
            for warning in findings { Console.err(warning.formatted(path: options.configPath)) }
        }
        if options.checkConfig {
            if options.json {
                Console.out(configuration.json.serialized(indent: 2))
            }
            return 0
        }
        return self.runAgent(configuration, path: options.configPath, warnings: findings)
    }

    /// Runs the agent until SIGTERM/SIGINT.
    ///
    /// - Parameters:
    ///   - warnings: what ``ConfigurationCheck`` found, logged once the logger is up.
    static func runAgent(_ configuration: AgentConfiguration, path: String, warnings: [ConfigDiagnostic]) -> Int32 {
        // Signals go to the loop's signalfd: block them before any thread (libdbus, libmosquitto) starts.
        do {
            try EventLoop.blockSignals(AgentRuntime.handledSignals)
        } catch {
            Console.err("empalinkd: cannot block signals: \(error)")
            return 1
        }
        let level = LogLevel(name: configuration.agent.logLevel.rawValue) ?? .info
        let logger = Logger.standard(identifier: "empalinkd", level: level)
        for warning in warnings {
            logger.warn("configuration: \(warning.formatted(path: path))")
        }
        do {
            let agent = try AgentRuntime(configuration: configuration, configPath: path, logger: logger)
            return agent.run()
        } catch {
            logger.error("\(error.message)")
            return 1
        }
    }
}
