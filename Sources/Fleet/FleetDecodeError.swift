/// Why a fleet message from the broker was not used: one line for the log, and the caller counts it as a drop.
///
/// Every payload and topic from the broker is treated as hostile; decoding never traps.
public enum FleetDecodeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not JSON by our strict reading (syntax, size, depth, duplicate keys, invalid UTF-8).
    case malformed(String)
    /// The topic is not one of the fleet's, or a segment is not a valid identifier.
    case badTopic(String)
    case missingField(String)
    case unknownField(String)
    case wrongType(field: String, expected: String)
    /// A number outside the field's range, or not exactly representable (an epoch with a fraction).
    case outOfRange(field: String, text: String)
    /// A protocol version this board does not speak.
    case unsupportedVersion(UInt64)

    public var description: String {
        switch self {
        case .malformed(let why): "malformed fleet payload: \(why)"
        case .badTopic(let why): "not a fleet topic: \(why)"
        case .missingField(let field): "fleet payload lacks \"\(field)\""
        case .unknownField(let field): "fleet payload has an unknown field \"\(field)\""
        case .wrongType(let field, let expected): "fleet payload field \"\(field)\" is not \(expected)"
        case .outOfRange(let field, let text): "fleet payload field \"\(field)\" is out of range: \(text)"
        case .unsupportedVersion(let version):
            "fleet protocol version \(version) is not supported (this board speaks \(FleetProtocol.version))"
        }
    }
}
