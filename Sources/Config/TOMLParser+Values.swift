/// Values: dispatch on the first character, booleans, arrays, inline tables, and the date/time refusal.
extension TOMLParser {
    /// Parses the value at the cursor.
    ///
    /// - Parameter depth: how deep the value sits (tables and arrays above it); arrays and inline tables deeper
    ///   than ``maximumNestingDepth`` are an error, which bounds the recursion.
    mutating func parseValue(depth: Int) throws(TOMLError) -> TOMLValue {
        let start = self.position
        guard let byte = self.peek() else {
            throw self.error("expected a value, found end of document")
        }
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "'"):
            return TOMLValue(.string(try self.parseStringValue()), at: start)
        case UInt8(ascii: "["):
            return try self.parseArray(depth: depth)
        case UInt8(ascii: "{"):
            return try self.parseInlineTable(depth: depth)
        case UInt8(ascii: "t"), UInt8(ascii: "f"):
            return TOMLValue(.boolean(try self.parseBoolean()), at: start)
        case UInt8(ascii: "0")...UInt8(ascii: "9"):
            if self.looksLikeDateOrTime() {
                throw self.error(TOMLParser.dateTimeMessage)
            }
            return TOMLValue(try self.parseNumber(), at: start)
        case UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "i"), UInt8(ascii: "n"):
            return TOMLValue(try self.parseNumber(), at: start)
        default:
            if TOMLParser.isNumberByte(byte) {
                throw self.error("expected a value, found '\(self.word())'; strings need quotes, "
                    + "booleans are 'true' and 'false'")
            }
            throw self.error(
                "expected a value (string, number, boolean, array or inline table), found \(self.found)")
        }
    }

    /// `YYYY-` or `HH:` at the cursor: the start of a date, date-time or time, which this format refuses.
    private func looksLikeDateOrTime() -> Bool {
        func isDigit(_ byte: UInt8?) -> Bool {
            guard let byte else { return false }
            return byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
        }
        if isDigit(self.peek(1)) && self.peek(2) == UInt8(ascii: ":") {
            return true
        }
        return isDigit(self.peek(1)) && isDigit(self.peek(2)) && isDigit(self.peek(3))
            && self.peek(4) == UInt8(ascii: "-")
    }

    private mutating func parseBoolean() throws(TOMLError) -> Bool {
        if self.matches("true") {
            self.skip(4)
            return true
        }
        if self.matches("false") {
            self.skip(5)
            return false
        }
        throw self.error("expected a value, found '\(self.word())'; strings need quotes, "
            + "booleans are 'true' and 'false'")
    }

    /// Whether the bytes at the cursor spell `literal`.
    func matches(_ literal: StaticString) -> Bool {
        var offset = 0
        var result = true
        literal.withUTF8Buffer { text in
            for byte in text {
                if self.peek(offset) != byte {
                    result = false
                    return
                }
                offset &+= 1
            }
        }
        return result
    }

    mutating func skip(_ count: Int) {
        for _ in 0..<count {
            self.advance()
        }
    }

    /// The run of value-like characters at the cursor (at most 40), for messages.
    func word() -> String {
        var end = self.index
        while end < self.bytes.count && end - self.index < 40 && TOMLParser.isNumberByte(self.bytes[end]) {
            end &+= 1
        }
        return String(decoding: self.bytes[self.index..<end], as: UTF8.self)
    }

    /// `[ v, v, … ]`: newlines and comments allowed between elements, a trailing comma allowed, mixed types
    /// allowed (TOML 1.0).
    private mutating func parseArray(depth: Int) throws(TOMLError) -> TOMLValue {
        let start = self.position
        try self.checkDepth(depth)
        self.advance()
        var elements: [TOMLValue] = []
        while true {
            try self.skipWhitespaceCommentsAndNewlines()
            if self.peek() == UInt8(ascii: "]") {
                self.advance()
                return TOMLValue(.array(elements), at: start)
            }
            if self.peek() == nil {
                throw self.error("unterminated array (opened at \(start)), found end of document")
            }
            elements.append(try self.parseValue(depth: depth &+ 1))
            try self.skipWhitespaceCommentsAndNewlines()
            switch self.peek() {
            case UInt8(ascii: ","):
                self.advance()
            case UInt8(ascii: "]"):
                self.advance()
                return TOMLValue(.array(elements), at: start)
            default:
                throw self.error("expected ',' or ']' in array (opened at \(start)), found \(self.found)")
            }
        }
    }

    /// `{ k = v, k = v }`: on one line, no trailing comma, and closed for good once written.
    private mutating func parseInlineTable(depth: Int) throws(TOMLError) -> TOMLValue {
        let start = self.position
        try self.checkDepth(depth)
        self.advance()
        self.section &+= 1
        let section = self.section
        let table = self.tree.makeInlineTable(at: start, depth: depth)
        self.skipWhitespace()
        if self.peek() == UInt8(ascii: "}") {
            self.advance()
            return TOMLValue(.table(self.tree.materialize(table)), at: start)
        }
        while true {
            self.skipWhitespace()
            try self.parseKeyValue(into: table, section: section)
            self.skipWhitespace()
            switch self.peek() {
            case UInt8(ascii: ","):
                self.advance()
                self.skipWhitespace()
                if self.peek() == UInt8(ascii: "}") {
                    throw self.error("trailing comma is not allowed in an inline table (opened at \(start))")
                }
            case UInt8(ascii: "}"):
                self.advance()
                return TOMLValue(.table(self.tree.materialize(table)), at: start)
            case UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                throw self.error(
                    "expected ',' or '}' in inline table (opened at \(start)), found end of line; "
                        + "inline tables must be on one line")
            default:
                throw self.error("expected ',' or '}' in inline table (opened at \(start)), found \(self.found)")
            }
        }
    }

    private func checkDepth(_ depth: Int) throws(TOMLError) {
        if depth > TOMLParser.maximumNestingDepth {
            throw self.error("nesting deeper than \(TOMLParser.maximumNestingDepth) levels of tables and arrays")
        }
    }
}
