/// Keys: bare, quoted and dotted, and how keys are shown in messages.
extension TOMLParser {
    /// Parses a dotted key (`a`, `"a b".c`, `a . 'b'`) and the whitespace after it.
    ///
    /// - Throws: ``TOMLError`` when no key is at the cursor or a segment is malformed.
    mutating func parseKey() throws(TOMLError) -> [KeySegment] {
        var segments: [KeySegment] = []
        while true {
            segments.append(try self.parseSimpleKey())
            self.skipWhitespace()
            guard self.peek() == UInt8(ascii: ".") else { return segments }
            self.advance()
            self.skipWhitespace()
        }
    }

    /// Parses one bare or quoted key segment.
    private mutating func parseSimpleKey() throws(TOMLError) -> KeySegment {
        let start = self.position
        guard let byte = self.peek() else {
            throw self.error("expected a key, found end of document")
        }
        switch byte {
        case UInt8(ascii: "\""):
            if self.peek(1) == UInt8(ascii: "\"") && self.peek(2) == UInt8(ascii: "\"") {
                throw self.error("a multi-line string cannot be a key")
            }
            return KeySegment(name: try self.parseBasicString(), position: start)
        case UInt8(ascii: "'"):
            if self.peek(1) == UInt8(ascii: "'") && self.peek(2) == UInt8(ascii: "'") {
                throw self.error("a multi-line string cannot be a key")
            }
            return KeySegment(name: try self.parseLiteralString(), position: start)
        default:
            let first = self.index
            while let next = self.peek(), TOMLParser.isBareKeyByte(next) {
                self.advance()
            }
            guard self.index > first else {
                throw self.error("expected a key, found \(self.found)")
            }
            return KeySegment(name: String(decoding: self.bytes[first..<self.index], as: UTF8.self), position: start)
        }
    }

    /// `A-Z a-z 0-9 - _`: the characters of a bare key in TOML 1.0.
    @inline(__always)
    static func isBareKeyByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            return true
        default:
            return false
        }
    }

    /// A key as TOML would write it: bare segments where possible, quoted otherwise, joined by dots.
    static func render(_ key: [KeySegment]) -> String {
        TOMLParser.render(names: key.map(\.name))
    }

    /// A key path as TOML would write it.
    static func render(names: [String]) -> String {
        var out = ""
        for (offset, name) in names.enumerated() {
            if offset > 0 { out += "." }
            if !name.isEmpty && name.utf8.allSatisfy(TOMLParser.isBareKeyByte) {
                out += name
            } else {
                TOMLParser.writeQuoted(name, to: &out)
            }
        }
        return out
    }

    /// A key for messages: `"port"`, `"mqtt.tls"`, or TOML's own quoting when a segment needs quotes.
    static func display(_ key: [KeySegment]) -> String {
        TOMLParser.display(names: key.map(\.name))
    }

    /// A key path for messages.
    static func display(names: [String]) -> String {
        let rendered = TOMLParser.render(names: names)
        let allBare = names.allSatisfy { !$0.isEmpty && $0.utf8.allSatisfy(TOMLParser.isBareKeyByte) }
        return TOMLParser.shortened(allBare ? "\"\(rendered)\"" : rendered)
    }

    /// `text` for a one-line message: at most 60 characters of it, then `…` and its full size, so that a huge key
    /// or number is never echoed whole.
    static func shortened(_ text: String, limit: Int = 60) -> String {
        let scalars = text.unicodeScalars
        guard scalars.count > limit else { return text }
        return String(String.UnicodeScalarView(scalars.prefix(limit - 3))) + "… (\(text.utf8.count) bytes)"
    }

    /// Writes `name` as a TOML basic string whose text stays on one line: quotes, backslashes and anything not
    /// printable are escaped.
    static func writeQuoted(_ name: String, to out: inout String) {
        out += "\""
        for scalar in name.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            default:
                let printable = scalar.isASCII
                    ? !TOMLParser.isControl(UInt8(scalar.value)) : TOMLParser.isPrintable(scalar)
                if printable {
                    out.unicodeScalars.append(scalar)
                } else {
                    let hex = String(scalar.value, radix: 16, uppercase: true)
                    let width = scalar.value > 0xFFFF ? 8 : 4
                    out += width == 8 ? "\\U" : "\\u"
                    out += String(repeating: "0", count: max(0, width - hex.count)) + hex
                }
            }
        }
        out += "\""
    }
}
