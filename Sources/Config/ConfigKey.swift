/// One key of the agent configuration: its dotted path, how it is checked, its default and its documentation.
///
/// ``ConfigSchema/keys`` is the single table the validator checks against and ``ConfigReference`` renders as
/// Docs/configuration.md, so the documentation cannot drift from what is enforced.
public struct ConfigKey: Sendable {
    /// Dotted path from the document root, e.g. `bluetooth.rssi_min`; keys of `[[wristband]]` entries are
    /// written `wristband.serial`.
    public let path: String
    /// How a value is checked; also gives the type and range columns of the reference.
    public let check: ConfigCheck
    /// The default, or how it is derived when absent.
    public let defaultValue: ConfigDefault
    /// One or two sentences for the operator.
    public let summary: String

    public init(_ path: String, _ check: ConfigCheck, default defaultValue: ConfigDefault, _ summary: String) {
        self.path = path
        self.check = check
        self.defaultValue = defaultValue
        self.summary = summary
    }

    /// The section (first path component), e.g. `bluetooth`.
    public var section: String {
        String(self.path.prefix { $0 != "." })
    }

    /// The path without its section, e.g. `tls.ca_file` for `mqtt.tls.ca_file`.
    public var name: String {
        guard let dot = self.path.firstIndex(of: ".") else { return self.path }
        return String(self.path[self.path.index(after: dot)...])
    }
}

/// How a configuration value is validated.
public enum ConfigCheck: Sendable {
    /// Any string whose UTF-8 length lies in the range.
    case string(ClosedRange<Int>)
    /// Letters, digits, `.`, `_`, `-`; 1–64 characters (safe inside an MQTT topic and a client id).
    case identifier
    /// One of the listed strings.
    case oneOf([String])
    /// An integer in the range.
    case integer(ClosedRange<Int64>)
    /// `true` or `false`.
    case boolean
    /// A file-system path (relative paths are resolved against the configuration file's directory); with a
    /// maximum byte length where the kernel imposes one (a Unix socket path fits in 107 bytes).
    case path(maxBytes: Int?)
    /// An array of distinct strings, each one of the listed values.
    case subsetOf([String])
    /// A wristband serial: 6 hex digits, e.g. `9ff167`.
    case serial
    /// A Bluetooth device address, e.g. `00:07:80:9F:F1:67`.
    case address
    /// A BlueZ adapter name: `hci` and a number.
    case adapter
    /// One adapter name, or an array of 1–8 distinct ones (a board with several radios, SPEC §18).
    case adapters
    /// An MQTT topic prefix: non-empty levels separated by `/`, no wildcards (`+`, `#`), no leading or trailing `/`.
    case topicPrefix
    /// An MQTT host name or address.
    case host

    /// The TOML type the value must have.
    public var tomlType: String {
        switch self {
        case .integer: return "integer"
        case .boolean: return "boolean"
        case .subsetOf: return "array of strings"
        case .adapters: return "string or array of strings"
        default: return "string"
        }
    }

    /// The accepted values, for messages and the reference.
    public var rangeDescription: String {
        switch self {
        case .string(let range):
            return range.lowerBound == 0 ? "up to \(range.upperBound) bytes" : "\(range.lowerBound)–\(range.upperBound) bytes"
        case .identifier: return "1–64 of `A-Z a-z 0-9 . _ -`"
        case .oneOf(let values): return values.map { "`\"\($0)\"`" }.joined(separator: " \\| ")
        case .integer(let range): return "\(range.lowerBound) … \(range.upperBound)"
        case .boolean: return "`true` \\| `false`"
        case .path(let maxBytes): return maxBytes.map { "path, at most \($0) bytes" } ?? "path"
        case .subsetOf(let values): return "any of " + values.map { "`\"\($0)\"`" }.joined(separator: " ")
        case .serial: return "6 hex digits"
        case .address: return "`XX:XX:XX:XX:XX:XX`"
        case .adapter: return "`hci0`, `hci1`, …"
        case .adapters: return "`\"hci0\"` or `[\"hci0\", \"hci1\"]` (1 … 8 distinct)"
        case .topicPrefix: return "topic levels, no `+ #`"
        case .host: return "host name or IP address"
        }
    }
}

/// A key's default.
public enum ConfigDefault: Sendable {
    /// A fixed value.
    case value(TOMLValue.Kind)
    /// Computed from other values or the machine when absent; the text says how.
    case derived(String)
    /// Absent means unset; the text says what that means.
    case unset(String)

    /// The reference's default column.
    public var documentation: String {
        switch self {
        case .value(let kind): return "`\(ConfigDefault.literal(kind))`"
        case .derived(let text): return text
        case .unset(let text): return text
        }
    }

    /// A TOML literal for the value, as the shipped configuration file writes it.
    public static func literal(_ kind: TOMLValue.Kind) -> String {
        switch kind {
        case .string(let s):
            var out = ""
            JSONValue.writeString(s, to: &out)
            return out
        case .integer(let i): return String(i)
        case .float(let d): return String(d)
        case .boolean(let b): return b ? "true" : "false"
        case .array(let items): return "[" + items.map { ConfigDefault.literal($0.kind) }.joined(separator: ", ") + "]"
        case .table: return "{}"
        }
    }
}
