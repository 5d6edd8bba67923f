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
