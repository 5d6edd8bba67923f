/// A small, strict JSON reader for the agent's payloads (SPEC §10): numbers become `Double`, objects keep their
/// last value per key. Input over ``maximumBytes``, nesting deeper than ``maximumDepth``, trailing bytes or any
/// syntax error is a ``PayloadError`` — the caller counts it as a drop; nothing here traps on input.
public indirect enum PayloadJSON: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([PayloadJSON])
    case object([String: PayloadJSON])

    /// The largest payload read (the agent's batches are a few KiB).
    public static let maximumBytes = 1 << 20
    public static let maximumDepth = 8

    /// Parses one JSON document.
    ///
    /// - Throws: ``PayloadError`` naming what did not fit and where.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(PayloadError) -> PayloadJSON {
        guard bytes.count <= Self.maximumBytes else { throw PayloadError("payload over \(Self.maximumBytes) bytes") }
        var reader = Reader(bytes: bytes)
        let value = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.index == bytes.count else { throw PayloadError("trailing bytes at offset \(reader.index)") }
        return value
    }

    /// Parses one JSON document from an array (tests, files).
    public static func parse(_ bytes: [UInt8]) throws(PayloadError) -> PayloadJSON {
        var result: Result<PayloadJSON, PayloadError> = .failure(PayloadError("empty"))
        bytes.withUnsafeBytes { raw in
            do throws(PayloadError) { result = .success(try Self.parse(raw)) } catch { result = .failure(error) }
        }
        return try result.get()
    }

    public subscript(key: String) -> PayloadJSON? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    public var number: Double? {
        if case .number(let value) = self, value.isFinite { return value }
        return nil
    }

    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var array: [PayloadJSON]? {
        if case .array(let items) = self { return items }
        return nil
    }

    public var object: [String: PayloadJSON]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// A non-negative integer that a `Double` holds exactly.
    public var count: Int? {
        guard let value = self.number, value >= 0, value <= 9_007_199_254_740_992, value == value.rounded(.down)
        else { return nil }
        return Int(value)
    }

    struct Reader {
        let bytes: UnsafeRawBufferPointer
        var index = 0

        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        mutating func skipSpace() {
            while self.index < self.bytes.count {
                switch self.bytes[self.index] {
                case 0x20, 0x09, 0x0A, 0x0D: self.index += 1
                default: return
                }
            }
        }

        mutating func value(depth: Int) throws(PayloadError) -> PayloadJSON {
            guard depth <= PayloadJSON.maximumDepth else { throw PayloadError("nested deeper than \(depth - 1)") }
            self.skipSpace()
            guard self.index < self.bytes.count else { throw PayloadError("unexpected end") }
            switch self.bytes[self.index] {
            case UInt8(ascii: "{"):
                self.index += 1
                var members: [String: PayloadJSON] = [:]
                self.skipSpace()
                if self.peek(UInt8(ascii: "}")) { return .object(members) }
                while true {
                    self.skipSpace()
                    guard self.peek(UInt8(ascii: "\""), consume: false) else { throw self.error("expected a key") }
                    let key = try self.string()
                    self.skipSpace()
                    guard self.peek(UInt8(ascii: ":")) else { throw self.error("expected ':'") }
                    members[key] = try self.value(depth: depth + 1)
                    self.skipSpace()
                    if self.peek(UInt8(ascii: ",")) { continue }
                    if self.peek(UInt8(ascii: "}")) { return .object(members) }
                    throw self.error("expected ',' or '}'")
                }
            case UInt8(ascii: "["):
                self.index += 1
                var items: [PayloadJSON] = []
                self.skipSpace()
                if self.peek(UInt8(ascii: "]")) { return .array(items) }
                while true {
                    items.append(try self.value(depth: depth + 1))
                    self.skipSpace()
                    if self.peek(UInt8(ascii: ",")) { continue }
                    if self.peek(UInt8(ascii: "]")) { return .array(items) }
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

        mutating func peek(_ byte: UInt8, consume: Bool = true) -> Bool {
            guard self.index < self.bytes.count, self.bytes[self.index] == byte else { return false }
            if consume { self.index += 1 }
            return true
        }

        func error(_ text: String) -> PayloadError { PayloadError("\(text) at offset \(self.index)") }

        mutating func literal(_ word: String) throws(PayloadError) {
            let expected = Array(word.utf8)
            let count = expected.count
            guard self.index + count <= self.bytes.count else { throw self.error("unexpected end") }
            for offset in 0..<count where self.bytes[self.index + offset] != expected[offset] {
                throw self.error("invalid literal")
            }
            self.index += count
        }

        mutating func number() throws(PayloadError) -> Double {
            let start = self.index
            while self.index < self.bytes.count, Self.isNumberByte(self.bytes[self.index]) { self.index += 1 }
            guard self.index > start, self.index - start <= 40 else { throw self.error("expected a value") }
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: self.bytes[start..<self.index]), as: UTF8.self)
            // JSON numbers only: no leading '+', no bare '.', no "inf"/"nan" (Double(_:) would take those).
            guard let first = text.utf8.first, first != UInt8(ascii: "+"), first != UInt8(ascii: "."),
                  let value = Double(text), value.isFinite
            else { throw PayloadError("invalid number at offset \(start)") }
            return value
        }

        static func isNumberByte(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."),
                 UInt8(ascii: "e"), UInt8(ascii: "E"):
                return true
            default:
                return false
            }
        }

        mutating func string() throws(PayloadError) -> String {
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
                        guard self.index + 4 <= self.bytes.count,
                              let code = UInt32(String(decoding: UnsafeRawBufferPointer(
                                rebasing: self.bytes[self.index..<self.index + 4]), as: UTF8.self), radix: 16)
                        else { throw self.error("invalid \\u escape") }
                        self.index += 4
                        // Surrogates are not needed for our payloads: replaced, never trapped on.
                        let scalar = Unicode.Scalar(code) ?? "\u{FFFD}"
                        out.append(contentsOf: Array(String(Character(scalar)).utf8))
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

/// Why a payload was not used: one line for a log and the drop counters.
public struct PayloadError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { self.message }
}
