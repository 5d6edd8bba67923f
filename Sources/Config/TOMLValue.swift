/// A TOML value with the position where it starts in the document.
///
/// Positions let the configuration validator point at the offending value (`PATH:LINE:COL`).
public struct TOMLValue: Hashable, Sendable {
    /// What the value is. Date/time values are rejected by the parser, so they have no case.
    public enum Kind: Hashable, Sendable {
        case string(String)
        case integer(Int64)
        case float(Double)
        case boolean(Bool)
        case array([TOMLValue])
        case table(TOMLTable)
    }

    public var kind: Kind
    /// Where the value starts: the first character of a scalar, array or inline table; for a table made by a
    /// `[header]` or `[[header]]`, the header's first character; for an implicitly created table, the key that
    /// created it.
    public var position: SourcePosition

    public init(_ kind: Kind, at position: SourcePosition) {
        self.kind = kind
        self.position = position
    }

    /// The TOML type name used in messages: "string", "integer", "float", "boolean", "array", "table".
    public var typeName: String {
        switch self.kind {
        case .string: return "string"
        case .integer: return "integer"
        case .float: return "float"
        case .boolean: return "boolean"
        case .array: return "array"
        case .table: return "table"
        }
    }
}

extension TOMLValue {
    /// The value in the toml-test decoder shape: scalars as `{"type": …, "value": …}` with the value as a string,
    /// arrays as JSON arrays, tables as JSON objects.
    ///
    /// Floats are written as "inf", "-inf", "nan" or the shortest decimal that reads back as the same `Double`.
    public var tomlTestJSON: JSONValue {
        switch self.kind {
        case .string(let text):
            return TOMLValue.tagged("string", text)
        case .integer(let number):
            return TOMLValue.tagged("integer", String(number))
        case .float(let number):
            let text: String
            if number.isNaN {
                text = "nan"
            } else if number.isInfinite {
                text = number < 0 ? "-inf" : "inf"
            } else {
                text = String(number)
            }
            return TOMLValue.tagged("float", text)
        case .boolean(let flag):
            return TOMLValue.tagged("bool", flag ? "true" : "false")
        case .array(let elements):
            return .array(elements.map(\.tomlTestJSON))
        case .table(let table):
            return table.tomlTestJSON
        }
    }

    private static func tagged(_ type: String, _ value: String) -> JSONValue {
        .object([("type", .string(type)), ("value", .string(value))])
    }
}
