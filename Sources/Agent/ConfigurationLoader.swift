#if canImport(Glibc)
import Glibc
#endif
import Config
import Posix

/// Reads, parses and validates a configuration file: the I/O half that the pure `Config` module leaves out.
public enum ConfigurationLoader {
    /// The default configuration path (SPEC §3).
    public static let defaultPath = "/etc/empalink/empalinkd.toml"

    /// Loads the file at `path`.
    ///
    /// - Returns: the validated configuration.
    /// - Throws: ``ConfigErrors``: a file that cannot be read, the first TOML syntax error, or every validation
    ///   error.
    public static func load(path: String) throws(ConfigErrors) -> AgentConfiguration {
        let bytes: [UInt8]
        do {
            bytes = try readFile(atPath: path, limit: 4 << 20)
        } catch {
            let reason = error.rawValue == EFBIG ? "file is larger than 4 MiB" : error.description
            throw ConfigErrors([ConfigDiagnostic("cannot read configuration file: \(reason)", at: nil)])
        }
        let document: TOMLTable
        do {
            document = try TOMLParser.parse(bytes)
        } catch {
            throw ConfigErrors([ConfigDiagnostic(error.message, at: error.position)])
        }
        let environment = ConfigEnvironment(hostname: self.hostname(), configDirectory: self.directory(of: path))
        return try ConfigValidator.validate(document, environment: environment)
    }

    /// The machine's host name, or "empalink" when it cannot be read.
    static func hostname() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "empalink" }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        let name = String(decoding: bytes, as: UTF8.self)
        return name.isEmpty ? "empalink" : name
    }

    /// The absolute directory containing `path`.
    static func directory(of path: String) -> String {
        var absolute = path
        if !path.hasPrefix("/") {
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            if getcwd(&buffer, buffer.count) != nil {
                let cwd = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                absolute = cwd == "/" ? "/" + path : cwd + "/" + path
            }
        }
        guard let slash = absolute.lastIndex(of: "/") else { return "." }
        let directory = String(absolute[..<slash])
        return directory.isEmpty ? "/" : self.normalized(directory)
    }

    /// Removes `.` components and resolves `..` textually, so messages and `--json` show clean paths.
    static func normalized(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/") {
            if part == "." { continue }
            if part == "..", !parts.isEmpty, parts.last != ".." {
                parts.removeLast()
                continue
            }
            parts.append(part)
        }
        return "/" + parts.joined(separator: "/")
    }
}
