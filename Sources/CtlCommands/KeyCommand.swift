import CCrypto
import EmpaLink
import Glibc
import Posix

/// `empalinkctl key add|list|revoke`: creates an API key, prints it once and stores only its SHA-256 in the
/// keyring; lists the keyring's entries; removes one.
public enum KeyCommand: CtlCommand {
    public static let name = "key"
    public static let summary = "create, list or revoke API keys (stored hashed in the keyring)"
    public static let usage = """
        empalinkctl key add --devices SERIAL[,SERIAL...]|'*' [--expires YYYY-MM-DD] [--keyring PATH]
        empalinkctl key list [--keyring PATH]
        empalinkctl key revoke --sha256 HEX [--keyring PATH]
          --devices   serials the key unlocks (6 hex digits each), or '*' for every device
          --expires   last valid day (UTC), today or later; default: never
          --keyring   keyring file (default /etc/empalink/keyring.toml); created with mode 0600 if missing
          --sha256    the entry to revoke: its hash as `key list` prints it, or a unique prefix of 8+ digits
        add prints the key once on stdout; only its hash is stored. Put it in the agent's auth.api_key_file.
        list prints one line per entry: hash prefix, devices, expiry. revoke rewrites the keyring without the
        entry (comments are not kept). The agent reads the keyring at start: `systemctl restart empalinkd`.
        """

    struct Options: Equatable {
        var devices: [String]?
        var expires: CalendarDay?
        var keyring = "/etc/empalink/keyring.toml"
    }

    static func parse(_ arguments: [String], today: CalendarDay = .today) -> Result<Options, UsageError> {
        guard arguments.first == "add" else {
            return .failure(UsageError(arguments.first.map { "unknown subcommand '\($0)'" }
                                           ?? "missing subcommand: add, list or revoke"))
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
                // A key that expired before it was handed out would be refused at once, with no hint why.
                guard day >= today else {
                    return .failure(UsageError("--expires: \(day) is in the past (today is \(today) UTC)"))
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
        switch arguments.first {
        case "list": return self.list(Array(arguments.dropFirst()))
        case "revoke": return self.revoke(Array(arguments.dropFirst()))
        default: return self.add(arguments)
        }
    }

    static func add(_ arguments: [String]) -> Int32 {
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

extension KeyCommand {
    /// The hex digits of an entry's hash that `key list` prints: enough to tell entries apart, not the whole hash.
    static let listedDigits = 16

    /// Reads and parses the keyring, or prints why not.
    static func loadKeyring(_ path: String) -> Keyring? {
        let bytes: [UInt8]
        do throws(Errno) {
            bytes = try readFile(atPath: path, limit: 4 << 20)
        } catch {
            Console.err("key: \(path): error: cannot read keyring: \(error)")
            return nil
        }
        do {
            return try Keyring.parse(bytes)
        } catch {
            for diagnostic in error.diagnostics { Console.err(diagnostic.formatted(path: path)) }
            return nil
        }
    }

    static func keyringFlag(
        _ arguments: [String],
        also extra: Set<String> = []
    ) -> Result<[String: String], CtlSupport.ExitCode> {
        switch CtlSupport.flags(arguments, allowed: extra.union(["--keyring"])) {
        case .success(let values): return .success(values)
        case .failure(let message):
            Console.err("key: \(message.text)")
            Console.err("usage: \(self.usage)")
            return .failure(CtlSupport.ExitCode(code: 2))
        }
    }

    /// One line per entry: hash prefix, devices, expiry (and whether it has passed).
    static func describe(_ entry: Keyring.Entry, today: CalendarDay) -> String {
        let hash = String(Keyring.hex(entry.digest).prefix(self.listedDigits))
        let devices = entry.devices.map { $0.sorted().joined(separator: ",") } ?? "*"
        let expiry: String
        if let expires = entry.expires {
            expiry = expires < today ? "expired \(expires)" : "expires \(expires)"
        } else {
            expiry = "never expires"
        }
        return "\(hash)  \(devices)  \(expiry)"
    }

    static func list(_ arguments: [String]) -> Int32 {
        let values: [String: String]
        switch self.keyringFlag(arguments) {
        case .success(let parsed): values = parsed
        case .failure(let exit): return exit.code
        }
        let path = values["--keyring"] ?? Options().keyring
        guard let keyring = self.loadKeyring(path) else { return 1 }
        let today = CalendarDay.today
        for entry in keyring.entries { Console.out(self.describe(entry, today: today)) }
        Console.err("key: \(keyring.entries.count) entries in \(path)")
        return 0
    }

    static func revoke(_ arguments: [String]) -> Int32 {
        let values: [String: String]
        switch self.keyringFlag(arguments, also: ["--sha256"]) {
        case .success(let parsed): values = parsed
        case .failure(let exit): return exit.code
        }
        guard let prefix = values["--sha256"]?.lowercased(), prefix.utf8.count >= 8, prefix.utf8.count <= 64,
              prefix.allSatisfy(\.isHexDigit)
        else {
            Console.err("key: revoke needs --sha256 with 8 to 64 hex digits of the entry's hash (see `key list`)")
            return 2
        }
        let path = values["--keyring"] ?? Options().keyring
        guard let keyring = self.loadKeyring(path) else { return 1 }
        let matches = keyring.entries.filter { Keyring.hex($0.digest).hasPrefix(prefix) }
        guard matches.count == 1, let revoked = matches.first else {
            Console.err(matches.isEmpty ? "key: error: no entry in \(path) has a hash starting \(prefix)"
                            : "key: error: \(matches.count) entries start \(prefix); give more digits")
            return 1
        }
        let kept = keyring.entries.filter { $0 != revoked }
        let text = kept.map(self.entryText).joined(separator: "\n")
        if let failure = self.replace(path, with: text) {
            Console.err("key: \(path): error: \(failure)")
            return 1
        }
        Console.err("key: revoked \(self.describe(revoked, today: .today)); \(kept.count) entries left "
                        + "(restart the agent to apply)")
        return 0
    }

    /// An entry as `key add` writes it.
    static func entryText(_ entry: Keyring.Entry) -> String {
        var text = "[[key]]\nsha256 = \"\(Keyring.hex(entry.digest))\"\n"
        let list = entry.devices.map { $0.sorted().map { "\"\($0)\"" } } ?? ["\"*\""]
        text += "devices = [\(list.joined(separator: ", "))]\n"
        if let expires = entry.expires { text += "expires = \"\(expires)\"\n" }
        return text
    }

    /// Replaces the file atomically (a temporary file beside it, fsync, rename), keeping its mode and owner.
    ///
    /// - Returns: `nil`, or what failed.
    static func replace(_ path: String, with text: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return "cannot stat keyring: \(Errno.current)" }
        let temporary = path + ".tmp"
        let fd = Glibc.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return "cannot create \(temporary): \(Errno.current)" }
        let file = FileDescriptor(rawValue: fd)
        do throws(Errno) {
            try file.writeAll(text)
            // Owner first: chown clears nothing we set after it.
            guard fchown(fd, info.st_uid, info.st_gid) == 0, fchmod(fd, info.st_mode & 0o777) == 0,
                  fsync(fd) == 0
            else { throw Errno.current }
        } catch {
            file.close()
            unlink(temporary)
            return "cannot write \(temporary): \(error)"
        }
        file.close()
        guard rename(temporary, path) == 0 else {
            let error = Errno.current
            unlink(temporary)
            return "cannot replace the keyring: \(error)"
        }
        return nil
    }
}
