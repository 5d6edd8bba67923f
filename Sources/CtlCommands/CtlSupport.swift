#if canImport(Glibc)
import Glibc
#endif
import Agent
import Config
import DBus
import EventLoop
import Posix

/// Shared plumbing for the commands that talk to BlueZ: configuration, the event loop, the system bus.
enum CtlSupport {
    /// A process exit code as an error value.
    struct ExitCode: Error { var code: Int32 }
    /// A one-line message as an error value.
    struct Message: Error, CustomStringConvertible {
        var text: String
        init(_ text: String) { self.text = text }
        var description: String { self.text }
    }

    /// Loads the configuration. An explicitly named file must be valid; the default one may be absent.
    ///
    /// - Returns: the configuration (`nil` when the default file is absent), or an exit code after printing errors.
    static func configuration(path: String?, command: String) -> Result<AgentConfiguration?, ExitCode> {
        let chosen = path ?? ConfigurationLoader.defaultPath
        if path == nil, access(chosen, F_OK) != 0 {
            Console.err("\(command): no configuration at \(chosen); using defaults, no whitelist")
            return .success(Optional<AgentConfiguration>.none)
        }
        do throws(ConfigErrors) {
            return .success(try ConfigurationLoader.load(path: chosen))
        } catch {
            for diagnostic in error.diagnostics { Console.err(diagnostic.formatted(path: chosen)) }
            return .failure(ExitCode(code: 2))
        }
    }

    /// A loop with SIGINT/SIGTERM ending it.
    static func loop(command: String) -> EventLoop? {
        do {
            try EventLoop.blockSignals([SIGINT, SIGTERM])
            let loop = try EventLoop()
            try loop.onSignal(SIGINT) { _ in loop.stop() }
            try loop.onSignal(SIGTERM) { _ in loop.stop() }
            return loop
        } catch {
            Console.err("\(command): error: cannot start the event loop: \(error)")
            return nil
        }
    }

    /// A loop and a system-bus connection, with SIGINT/SIGTERM ending the loop.
    static func connect(command: String) -> (EventLoop, DBusConnection)? {
        guard let loop = Self.loop(command: command) else { return nil }
        do {
            let connection = try DBusConnection.connect(address: DBusConnection.systemBusAddress, loop: loop)
            return (loop, connection)
        } catch {
            Console.err("\(command): error: cannot reach the system bus (\(DBusConnection.systemBusAddress)): "
                            + "\(error)")
            return nil
        }
    }

    /// Parses `--flag value` pairs against the allowed flags.
    static func flags(_ arguments: [String], allowed: Set<String>) -> Result<[String: String], Message> {
        var values: [String: String] = [:]
        var index = 0
        while index < arguments.count {
            let flag = arguments[index]
            guard allowed.contains(flag) else { return .failure(Message("unknown option '\(flag)'")) }
            guard index + 1 < arguments.count, !arguments[index + 1].isEmpty else {
                return .failure(Message("\(flag) needs a value"))
            }
            values[flag] = arguments[index + 1]
            index += 2
        }
        return .success(values)
    }

    static func seconds(_ text: String?, default value: Int, range: ClosedRange<Int>) -> Int? {
        guard let text else { return value }
        guard let number = Int(text), range.contains(number) else { return nil }
        return number
    }
}
