/// A strict parser for the flat JSON objects used as commands: `{"key": "string" | true | false | number}`.
/// Anything else (nesting, duplicates, trailing bytes, over 4 KiB) is an error with a reason.
enum FlatJSON {
    enum Value: Equatable {
        case string(String)
        case bool(Bool)
        case number(Double)
        case null
    }

    struct ParseError: Error, Equatable {
        var message: String
        init(_ message: String) { self.message = message }
    }

    static func parse(_ bytes: [UInt8]) -> Result<[String: Value], ParseError> {
        guard bytes.count <= 4096 else { return .failure(ParseError("longer than 4096 bytes")) }
        var index = 0
        func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }
        func expect(_ byte: UInt8) -> Bool {
            skipSpace()
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }
        func string() -> String? {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
            index += 1
            var out: [UInt8] = []
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""): return String(validating: out, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { return nil }
                    let escaped = bytes[index]
                    index += 1
                    switch escaped {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escaped)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "t"): out.append(0x09)
                    default: return nil
                    }
                case 0..<0x20: return nil
                default: out.append(byte)
                }
            }
            return nil
        }
        func literal(_ text: String) -> Bool {
            let utf8 = Array(text.utf8)
            guard index + utf8.count <= bytes.count, Array(bytes[index..<index + utf8.count]) == utf8 else {
                return false
            }
            index += utf8.count
            return true
        }
        guard expect(UInt8(ascii: "{")) else { return .failure(ParseError("expected a JSON object")) }
        var members: [String: Value] = [:]
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
        } else {
            while true {
                skipSpace()
                guard let key = string() else { return .failure(ParseError("expected a quoted key")) }
                guard members[key] == nil else { return .failure(ParseError("duplicate key \"\(key)\"")) }
                guard expect(UInt8(ascii: ":")) else { return .failure(ParseError("expected ':' after \"\(key)\"")) }
                skipSpace()
                guard index < bytes.count else { return .failure(ParseError("missing value for \"\(key)\"")) }
                if bytes[index] == UInt8(ascii: "\"") {
                    guard let text = string() else { return .failure(ParseError("bad string for \"\(key)\"")) }
                    members[key] = .string(text)
                } else if literal("true") {
                    members[key] = .bool(true)
                } else if literal("false") {
                    members[key] = .bool(false)
                } else if literal("null") {
                    members[key] = .null
                } else {
                    var end = index
                    while end < bytes.count, Array("+-0123456789.eE".utf8).contains(bytes[end]) { end += 1 }
                    guard end > index, let number = Double(String(decoding: bytes[index..<end], as: UTF8.self)) else {
                        return .failure(ParseError("unsupported value for \"\(key)\" (objects and arrays are not commands)"))
                    }
                    index = end
                    members[key] = .number(number)
                }
                if expect(UInt8(ascii: ",")) { continue }
                guard expect(UInt8(ascii: "}")) else { return .failure(ParseError("expected ',' or '}'")) }
                break
            }
        }
        skipSpace()
        guard index == bytes.count else { return .failure(ParseError("unexpected bytes after the object")) }
        return .success(members)
    }
}
