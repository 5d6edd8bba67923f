/// A small JSON document model with a deterministic serializer (object keys keep insertion order).
///
/// For control-plane output only (`--check-config --json`, `toml-decode`); the data path has its own
/// allocation-free writer.
public indirect enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.int(let a), .int(let b)): return a == b
        case (.double(let a), .double(let b)): return a == b || (a.isNaN && b.isNaN)
        case (.string(let a), .string(let b)): return a == b
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let v): hasher.combine(v)
        case .int(let v): hasher.combine(v)
        case .double(let v): hasher.combine(v)
        case .string(let v): hasher.combine(v)
        case .array(let v): hasher.combine(v)
        case .object(let v):
            for (key, value) in v {
                hasher.combine(key)
                hasher.combine(value)
            }
        }
    }

    /// Serializes the value. With `indent` > 0, pretty-printed with that many spaces per level.
    public func serialized(indent: Int = 0) -> String {
        var out = ""
        self.write(to: &out, indent: indent, level: 0)
        return out
    }

    private func write(to out: inout String, indent: Int, level: Int) {
        switch self {
        case .null: out += "null"
        case .bool(let v): out += v ? "true" : "false"
        case .int(let v): out += String(v)
        case .double(let v):
            // JSON has no inf/nan; they are written as strings so the output stays valid JSON.
            if v.isNaN {
                out += "\"nan\""
            } else if v.isInfinite {
                out += v < 0 ? "\"-inf\"" : "\"inf\""
            } else {
                out += String(v)
            }
        case .string(let v): JSONValue.writeString(v, to: &out)
        case .array(let items):
            if items.isEmpty {
                out += "[]"
                return
            }
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                JSONValue.newline(&out, indent: indent, level: level + 1)
                item.write(to: &out, indent: indent, level: level + 1)
            }
            JSONValue.newline(&out, indent: indent, level: level)
            out += "]"
        case .object(let members):
            if members.isEmpty {
                out += "{}"
                return
            }
            out += "{"
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { out += "," }
                JSONValue.newline(&out, indent: indent, level: level + 1)
                JSONValue.writeString(key, to: &out)
                out += indent > 0 ? ": " : ":"
                value.write(to: &out, indent: indent, level: level + 1)
            }
            JSONValue.newline(&out, indent: indent, level: level)
            out += "}"
        }
    }

    private static func newline(_ out: inout String, indent: Int, level: Int) {
        guard indent > 0 else { return }
        out += "\n"
        out += String(repeating: " ", count: indent * level)
    }

    /// Writes `value` as a JSON string literal, escaping quotes, backslashes and control characters.
    public static func writeString(_ value: String, to out: inout String) {
        out += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}
