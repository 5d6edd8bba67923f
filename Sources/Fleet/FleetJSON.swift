/// A small, strict JSON reader for the fleet's retained payloads (SPEC §18).
///
/// `Fleet` depends on nothing (the consumer's `PayloadJSON` lives in a module that drags in the agent), so it keeps
/// its own reader. It is deliberately narrower than JSON: a number keeps its text so that an epoch is read as an
/// exact `UInt64` rather than through a `Double`; duplicate keys, nesting deeper than ``maximumDepth``, input over
/// ``maximumBytes``, trailing bytes, invalid UTF-8 and control characters in strings are errors. Nothing here traps
/// on input; every failure is a ``FleetDecodeError``.
enum FleetJSON: Equatable, Sendable {
    case null
    case bool(Bool)
    /// The number's text, already checked against JSON's number grammar.
    case number(String)
    case string(String)
    case array([FleetJSON])
    case object([String: FleetJSON])

    /// The largest payload read: a board with a few adapters needs a few hundred bytes.
    static let maximumBytes = 4096
    /// Objects in arrays in objects (the presence's adapters) need 3.
    static let maximumDepth = 4
    /// Members per object and items per array: bounds the work a hostile payload causes.
    static let maximumItems = 64

    /// Parses one JSON document.
    ///
    /// - Throws: ``FleetDecodeError/malformed(_:)`` naming what did not fit and where.
    static func parse(_ bytes: [UInt8]) throws(FleetDecodeError) -> FleetJSON {
        guard bytes.count <= Self.maximumBytes else {
            throw .malformed("payload of \(bytes.count) bytes is over \(Self.maximumBytes)")
        }
        var reader = Reader(bytes: bytes)
        let value = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.index == bytes.count else { throw .malformed("trailing bytes at offset \(reader.index)") }
        return value
    }

    struct Reader {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func skipSpace() {
            while self.index < self.bytes.count {
                switch self.bytes[self.index] {
                case 0x20, 0x09, 0x0A, 0x0D: self.index += 1
                default: return
                }
            }
        }

        func error(_ text: String) -> FleetDecodeError { .malformed("\(text) at offset \(self.index)") }

        mutating func consume(_ byte: UInt8) -> Bool {
            guard self.index < self.bytes.count, self.bytes[self.index] == byte else { return false }
            self.index += 1
            return true
        }

        mutating func value(depth: Int) throws(FleetDecodeError) -> FleetJSON {
            guard depth <= FleetJSON.maximumDepth else {
                throw self.error("nested deeper than \(FleetJSON.maximumDepth)")
            }
            self.skipSpace()
            guard self.index < self.bytes.count else { throw self.error("unexpected end") }
            switch self.bytes[self.index] {
            case UInt8(ascii: "{"):
                self.index += 1
                var members: [String: FleetJSON] = [:]
                self.skipSpace()
                if self.consume(UInt8(ascii: "}")) { return .object(members) }
                while true {
                    self.skipSpace()
                    guard self.index < self.bytes.count, self.bytes[self.index] == UInt8(ascii: "\"") else {
                        throw self.error("expected a key")
                    }
                    let key = try self.string()
                    guard members[key] == nil else { throw self.error("duplicate key") }
                    guard members.count < FleetJSON.maximumItems else { throw self.error("too many members") }
                    self.skipSpace()
                    guard self.consume(UInt8(ascii: ":")) else { throw self.error("expected ':'") }
                    members[key] = try self.value(depth: depth + 1)
                    self.skipSpace()
                    if self.consume(UInt8(ascii: ",")) { continue }
                    if self.consume(UInt8(ascii: "}")) { return .object(members) }
                    throw self.error("expected ',' or '}'")
                }
            case UInt8(ascii: "["):
                self.index += 1
                var items: [FleetJSON] = []
                self.skipSpace()
                if self.consume(UInt8(ascii: "]")) { return .array(items) }
                while true {
                    guard items.count < FleetJSON.maximumItems else { throw self.error("too many items") }
                    items.append(try self.value(depth: depth + 1))
                    self.skipSpace()
                    if self.consume(UInt8(ascii: ",")) { continue }
                    if self.consume(UInt8(ascii: "]")) { return .array(items) }
                    throw self.error("expected ',' or ']'")
                }
            case UInt8(ascii: "\""):
                return .string(try self.string())
            case UInt8(ascii: "t"):
                try self.literal("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try self.literal("false")
                return .bool(false)
            case UInt8(ascii: "n"):
                try self.literal("null")
                return .null
            default:
                return .number(try self.number())
            }
        }

        mutating func literal(_ word: StaticString) throws(FleetDecodeError) {
            let count = word.utf8CodeUnitCount
            guard self.index + count <= self.bytes.count else { throw self.error("unexpected end") }
            let expected = word.utf8Start
            for offset in 0..<count where self.bytes[self.index + offset] != expected[offset] {
                throw self.error("invalid literal")
            }
            self.index += count
        }

        /// A number by JSON's grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, at most 32 bytes.
        mutating func number() throws(FleetDecodeError) -> String {
            let start = self.index
            func digits() -> Int {
                let from = self.index
                while self.index < self.bytes.count, (0x30...0x39).contains(self.bytes[self.index]) { self.index += 1 }
                return self.index - from
            }
            _ = self.consume(UInt8(ascii: "-"))
            guard self.index < self.bytes.count else { throw self.error("expected a value") }
            if self.bytes[self.index] == UInt8(ascii: "0") {
                self.index += 1
            } else {
                guard digits() > 0 else { throw self.error("expected a value") }
            }
            if self.consume(UInt8(ascii: ".")) {
                guard digits() > 0 else { throw self.error("expected a digit after '.'") }
            }
            if self.consume(UInt8(ascii: "e")) || self.consume(UInt8(ascii: "E")) {
                if !self.consume(UInt8(ascii: "+")) { _ = self.consume(UInt8(ascii: "-")) }
                guard digits() > 0 else { throw self.error("expected a digit in the exponent") }
            }
            guard self.index - start <= 32 else { throw .malformed("number longer than 32 bytes at offset \(start)") }
            return String(decoding: self.bytes[start..<self.index], as: UTF8.self)
        }

        mutating func string() throws(FleetDecodeError) -> String {
            self.index += 1  // the opening quote
            var out: [UInt8] = []
            while self.index < self.bytes.count {
                let byte = self.bytes[self.index]
                self.index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard let text = String(validating: out, as: UTF8.self) else {
                        throw self.error("invalid UTF-8 in a string")
                    }
                    return text
                case UInt8(ascii: "\\"):
                    guard self.index < self.bytes.count else { throw self.error("unexpected end") }
                    let escape = self.bytes[self.index]
                    self.index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "u"):
                        // Identifiers are ASCII; an escaped character is accepted only when it is a scalar on its
                        // own (surrogates are refused rather than paired: nothing we publish needs them).
                        guard self.index + 4 <= self.bytes.count,
                              let code = UInt32(String(decoding: self.bytes[self.index..<self.index + 4],
                                                       as: UTF8.self), radix: 16),
                              let scalar = Unicode.Scalar(code)
                        else { throw self.error("invalid \\u escape") }
                        self.index += 4
                        out.append(contentsOf: String(Character(scalar)).utf8)
                    default:
                        throw self.error("invalid escape")
                    }
                case 0x00..<0x20:
                    throw self.error("control character in a string")
                default:
                    out.append(byte)
                }
            }
            throw self.error("unterminated string")
        }
    }
}

extension FleetJSON {
    /// The members of an object payload, or a ``FleetDecodeError/wrongType(field:expected:)`` naming the payload.
    func members(of what: String) throws(FleetDecodeError) -> [String: FleetJSON] {
        guard case .object(let members) = self else { throw .wrongType(field: what, expected: "an object") }
        return members
    }
}

/// Typed field access over an object's members: every accessor names the field in its error.
struct FleetFields {
    let members: [String: FleetJSON]
    let allowed: Set<String>

    /// Checks that no member outside `allowed` is present (a typo or a newer protocol is a drop, not a guess).
    init(_ members: [String: FleetJSON], allowed: Set<String>) throws(FleetDecodeError) {
        for key in members.keys where !allowed.contains(key) {
            throw .unknownField(String(key.prefix(32)))
        }
        self.members = members
        self.allowed = allowed
    }

    func required(_ key: String) throws(FleetDecodeError) -> FleetJSON {
        guard let value = self.members[key] else { throw .missingField(key) }
        return value
    }

    func bool(_ key: String) throws(FleetDecodeError) -> Bool {
        guard case .bool(let value) = try self.required(key) else {
            throw .wrongType(field: key, expected: "a boolean")
        }
        return value
    }

    func string(_ key: String) throws(FleetDecodeError) -> String {
        guard case .string(let value) = try self.required(key) else {
            throw .wrongType(field: key, expected: "a string")
        }
        return value
    }

    /// A non-negative integer written without fraction or exponent, within `range`.
    func unsigned(_ key: String, in range: ClosedRange<UInt64>) throws(FleetDecodeError) -> UInt64 {
        guard case .number(let text) = try self.required(key) else {
            throw .wrongType(field: key, expected: "an integer")
        }
        // `UInt64("-0")` is 0: a sign is refused before the conversion.
        guard text.utf8.first != UInt8(ascii: "-"), let value = UInt64(text) else {
            throw .outOfRange(field: key, text: String(text.prefix(24)))
        }
        guard range.contains(value) else { throw .outOfRange(field: key, text: String(text.prefix(24))) }
        return value
    }

    /// A finite number within `range`.
    func double(_ key: String, in range: ClosedRange<Double>) throws(FleetDecodeError) -> Double {
        guard case .number(let text) = try self.required(key) else {
            throw .wrongType(field: key, expected: "a number")
        }
        guard let value = Double(text), value.isFinite, range.contains(value) else {
            throw .outOfRange(field: key, text: String(text.prefix(24)))
        }
        return value
    }
}
