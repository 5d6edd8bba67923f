import CCrypto
import EmpaLink
import Glibc
import Posix

/// `empalinkctl key add`: creates an API key, prints it once and stores only its SHA-256 in the keyring.
public enum KeyCommand: CtlCommand {
    public static let name = "key"
    public static let summary = "create an API key for some or all wristbands (stored hashed in the keyring)"
    public static let usage = """
        empalinkctl key add --devices SERIAL[,SERIAL...]|'*' [--expires YYYY-MM-DD] [--keyring PATH]
          --devices   serials the key unlocks (6 hex digits each), or '*' for every device
          --expires   last valid day (UTC); default: never
          --keyring   keyring file (default /etc/empalink/keyring.toml); created with mode 0600 if missing
        The key is printed once on stdout; only its hash is stored. Put it in the agent's auth.api_key_file.
        """

    struct Options: Equatable {
        var devices: [String]?
        var expires: CalendarDay?
        var keyring = "/etc/empalink/keyring.toml"
    }

    static func parse(_ arguments: [String]) -> Result<Options, UsageError> {
        guard arguments.first == "add" else {
            return .failure(UsageError(arguments.first.map { "unknown subcommand '\($0)'" } ?? "missing subcommand 'add'"))
        }
        var options = Options()
        var devicesGiven = false
        var index = 1
        while index < arguments.count {
            let flag = arguments[index]
            guard index + 1 < arguments.count else { return .failure(UsageError("\(flag) needs a value")) }
            let value = arguments[index + 1]
            switch flag {
            case "--devices":
                devicesGiven = true
                if value == "*" {
                    options.devices = nil
                } else {
                    let serials = value.split(separator: ",").map { String($0).lowercased() }
                    for serial in serials where serial.utf8.count != 6 || Keyring.bytes(fromHex: serial) == nil {
                        return .failure(UsageError("'\(serial)' is not a serial (6 hex digits)"))
                    }
                    guard !serials.isEmpty else { return .failure(UsageError("--devices needs at least one serial")) }
                    options.devices = serials
                }
            case "--expires":
                guard let day = CalendarDay(value) else {
                    return .failure(UsageError("--expires: '\(value)' is not a date YYYY-MM-DD"))
                }
                options.expires = day
            case "--keyring":
                guard !value.isEmpty else { return .failure(UsageError("--keyring needs a path")) }
                options.keyring = value
            default:
                return .failure(UsageError("unknown option '\(flag)'"))
            }
            index += 2
        }
        guard devicesGiven else { return .failure(UsageError("--devices is required (serials, or '*' for all)")) }
        return .success(options)
    }

    struct UsageError: Error, Equatable {
        var text: String
        init(_ text: String) { self.text = text }
    }

    public static func run(arguments: [String]) -> Int32 {
        let options: Options
        switch self.parse(arguments) {
        case .success(let parsed): options = parsed
        case .failure(let error):
            Console.err("key: \(error.text)")
            Console.err("usage: \(self.usage)")
            return 2
        }
        // An existing keyring must be valid: appending to a broken file would hide the damage.
        if let existing = try? readFile(atPath: options.keyring, limit: 4 << 20) {
            do {
                _ = try Keyring.parse(existing)
            } catch {
                for diagnostic in error.diagnostics { Console.err(diagnostic.formatted(path: options.keyring)) }
                return 2
            }
        }
        var random = [UInt8](repeating: 0, count: 20)
        guard random.withUnsafeMutableBytes({ RAND_bytes($0.baseAddress?.assumingMemoryBound(to: UInt8.self), 20) }) == 1
        else {
            Console.err("key: error: no randomness available from libcrypto")
            return 1
        }
        let apiKey = Keyring.hex(random)
        guard let entry = Keyring.entryText(apiKey: apiKey, devices: options.devices, expires: options.expires) else {
            Console.err("key: error: cannot hash the key")
            return 1
        }
        let fd = Glibc.open(options.keyring, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            Console.err("key: \(options.keyring): error: cannot open keyring: \(Errno.current)")
            return 1
        }
        let file = FileDescriptor(rawValue: fd)
        defer { file.close() }
        do throws(Errno) {
            try file.writeAll("\n" + entry)
            guard fsync(fd) == 0 else { throw Errno.current }
        } catch {
            Console.err("key: \(options.keyring): error: cannot write keyring: \(error)")
            return 1
        }
        Console.out(apiKey)
        return 0
    }
}
