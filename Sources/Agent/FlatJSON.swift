/// A strict parser for the flat JSON objects used as commands: `{"key": "string" | true | false | number}`.
/// Strings take every JSON escape, `\u` included (`{"mode":"\u0062ackground"}` is `{"mode":"background"}`).
/// Anything else (nesting, duplicates, trailing bytes, over 4 KiB, invalid UTF-8) is an error with a reason;
/// keys are cut short in messages.
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
        func hex4() -> UInt32? {
            guard index + 4 <= bytes.count else { return nil }
            var value: UInt32 = 0
            for byte in bytes[index..<index + 4] {
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                value = value << 4 | UInt32(digit)
            }
            index += 4
            return value
        }
        /// A quoted string at `index`, with every JSON escape (RFC 8259 §7), `\u` surrogate pairs included.
        func string() -> Result<String, ParseError> {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                return .failure(ParseError("expected a quoted string"))
            }
            index += 1
            var out: [UInt8] = []
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard let text = String(validating: out, as: UTF8.self) else {
                        return .failure(ParseError("a string is not valid UTF-8"))
                    }
                    return .success(text)
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { break }
                    let escaped = bytes[index]
                    index += 1
                    switch escaped {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escaped)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        guard var code = hex4() else {
                            return .failure(ParseError("\\u must be followed by 4 hex digits"))
                        }
                        if (0xD800..<0xDC00).contains(code) {
                            // A high surrogate: JSON writes a character beyond U+FFFF as a pair of escapes.
                            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                                  bytes[index + 1] == UInt8(ascii: "u") else {
                                return .failure(ParseError("\\u escape: a high surrogate without its low half"))
                            }
                            index += 2
                            guard let low = hex4(), (0xDC00..<0xE000).contains(low) else {
                                return .failure(ParseError("\\u escape: a high surrogate without its low half"))
                            }
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let scalar = Unicode.Scalar(code) else {
                            return .failure(ParseError("\\u escape: a low surrogate without its high half"))
                        }
                        out.append(contentsOf: Array(String(Character(scalar)).utf8))
                    default:
                        return .failure(ParseError("unknown escape '\\\(Character(Unicode.Scalar(escaped)))' "
                                                       + "in a string"))
                    }
                case 0..<0x20:
                    return .failure(ParseError("a control character in a string must be escaped"))
                default: out.append(byte)
                }
            }
            return .failure(ParseError("unterminated string"))
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
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                    return .failure(ParseError("expected a quoted key"))
                }
                let key: String
                switch string() {
                case .success(let text): key = text
                case .failure(let error): return .failure(ParseError("key: \(error.message)"))
                }
                let shown = Self.shown(key)
                guard members[key] == nil else { return .failure(ParseError("duplicate key \(shown)")) }
                guard expect(UInt8(ascii: ":")) else { return .failure(ParseError("expected ':' after \(shown)")) }
                skipSpace()
                guard index < bytes.count else { return .failure(ParseError("missing value for \(shown)")) }
                if bytes[index] == UInt8(ascii: "\"") {
                    switch string() {
                    case .success(let text): members[key] = .string(text)
                    case .failure(let error): return .failure(ParseError("value of \(shown): \(error.message)"))
                    }
                } else if literal("true") {
                    members[key] = .bool(true)
                } else if literal("false") {
                    members[key] = .bool(false)
                } else if literal("null") {
                    members[key] = .null
                } else {
                    var end = index
                    while end < bytes.count, Array("+-0123456789.eE".utf8).contains(bytes[end]) { end += 1 }
                    guard end > index else {
                        return .failure(
                            ParseError("unsupported value for \(shown) (objects and arrays are not commands)"))
                    }
                    guard Self.isJSONNumber(bytes[index..<end]),
                          let number = Double(String(decoding: bytes[index..<end], as: UTF8.self)), number.isFinite
                    else {
                        return .failure(ParseError("value of \(shown) is not a JSON number"))
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

    /// Whether `bytes` follow JSON's number grammar (RFC 8259 §6): `-? (0 | [1-9][0-9]*) (. [0-9]+)?
    /// ([eE] [+-]? [0-9]+)?`. Swift's `Double(_:)` alone also takes `+1`, `.5`, `01` and `1.`.
    static func isJSONNumber(_ bytes: ArraySlice<UInt8>) -> Bool {
        var index = bytes.startIndex
        func digits() -> Int {
            let start = index
            while index < bytes.endIndex, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            return index - start
        }
        if index < bytes.endIndex, bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.endIndex else { return false }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if digits() == 0 {
            return false
        }
        if index < bytes.endIndex, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { return false }
        }
        if index < bytes.endIndex, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.endIndex, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard digits() > 0 else { return false }
        }
        return index == bytes.endIndex
    }

    /// A key as messages quote it: in quotes, cut to 40 characters so a huge key is not echoed whole.
    static func shown(_ key: String) -> String {
        let scalars = key.unicodeScalars
        guard scalars.count > 40 else { return "\"\(key)\"" }
        return "\"" + String(String.UnicodeScalarView(scalars.prefix(37))) + "…\" (\(key.utf8.count) bytes)"
    }
}
