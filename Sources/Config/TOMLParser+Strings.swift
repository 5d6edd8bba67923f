/// The four string forms: basic, literal, multi-line basic, multi-line literal.
extension TOMLParser {
    /// Parses any string value at the cursor (the cursor is on its first quote).
    mutating func parseStringValue() throws(TOMLError) -> String {
        let quote = self.peek()
        let tripled = self.peek(1) == quote && self.peek(2) == quote
        if quote == UInt8(ascii: "\"") {
            return tripled ? try self.parseMultilineBasicString() : try self.parseBasicString()
        }
        return tripled ? try self.parseMultilineLiteralString() : try self.parseLiteralString()
    }

    /// `"…"`: escapes allowed, no newlines, no control characters.
    mutating func parseBasicString() throws(TOMLError) -> String {
        let start = self.position
        self.advance()
        var buffer: [UInt8] = []
        while true {
            guard let byte = self.peek() else {
                throw self.error("unterminated string (opened at \(start)), found end of document")
            }
            switch byte {
            case UInt8(ascii: "\""):
                self.advance()
                return String(decoding: buffer, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try self.parseEscape(into: &buffer, multiline: false)
            case UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                throw self.error(
                    "unterminated string (opened at \(start)), found end of line; use \"\"\" for multi-line strings")
            default:
                if TOMLParser.isControl(byte) {
                    throw self.controlCharacterInString(byte, escapable: true)
                }
                buffer.append(byte)
                self.advance()
            }
        }
    }

    /// `'…'`: no escapes, no newlines, no control characters but tab.
    mutating func parseLiteralString() throws(TOMLError) -> String {
        let start = self.position
        self.advance()
        let first = self.index
        while true {
            guard let byte = self.peek() else {
                throw self.error("unterminated literal string (opened at \(start)), found end of document")
            }
            switch byte {
            case UInt8(ascii: "'"):
                let text = String(decoding: self.bytes[first..<self.index], as: UTF8.self)
                self.advance()
                return text
            case UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                throw self.error("unterminated literal string (opened at \(start)), found end of line; "
                    + "use ''' for multi-line strings")
            default:
                if TOMLParser.isControl(byte) {
                    throw self.controlCharacterInString(byte, escapable: false)
                }
                self.advance()
            }
        }
    }

    /// `"""…"""`: escapes, newlines (CRLF becomes LF), line-ending backslashes; a newline right after the opening
    /// delimiter is dropped; up to two quotes may sit right before the closing delimiter.
    mutating func parseMultilineBasicString() throws(TOMLError) -> String {
        let start = self.position
        self.advance()
        self.advance()
        self.advance()
        try self.skipNewlineAfterOpeningDelimiter()
        var buffer: [UInt8] = []
        while true {
            guard let byte = self.peek() else {
                throw self.error("unterminated multi-line string (opened at \(start)), found end of document")
            }
            switch byte {
            case UInt8(ascii: "\""):
                if self.consumeClosingQuotes(UInt8(ascii: "\""), into: &buffer) {
                    return String(decoding: buffer, as: UTF8.self)
                }
            case UInt8(ascii: "\\"):
                try self.parseEscape(into: &buffer, multiline: true)
            case UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                try self.consumeNewline()
                buffer.append(UInt8(ascii: "\n"))
            default:
                if TOMLParser.isControl(byte) {
                    throw self.controlCharacterInString(byte, escapable: true)
                }
                buffer.append(byte)
                self.advance()
            }
        }
    }

    /// `'''…'''`: no escapes; newlines (CRLF becomes LF); same delimiter rules as `"""`.
    mutating func parseMultilineLiteralString() throws(TOMLError) -> String {
        let start = self.position
        self.advance()
        self.advance()
        self.advance()
        try self.skipNewlineAfterOpeningDelimiter()
        var buffer: [UInt8] = []
        while true {
            guard let byte = self.peek() else {
                throw self.error("unterminated multi-line literal string (opened at \(start)), found end of document")
            }
            switch byte {
            case UInt8(ascii: "'"):
                if self.consumeClosingQuotes(UInt8(ascii: "'"), into: &buffer) {
                    return String(decoding: buffer, as: UTF8.self)
                }
            case UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                try self.consumeNewline()
                buffer.append(UInt8(ascii: "\n"))
            default:
                if TOMLParser.isControl(byte) {
                    throw self.controlCharacterInString(byte, escapable: false)
                }
                buffer.append(byte)
                self.advance()
            }
        }
    }

    private mutating func skipNewlineAfterOpeningDelimiter() throws(TOMLError) {
        if let byte = self.peek(), byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") {
            try self.consumeNewline()
        }
    }

    /// At a run of `quote` in a multi-line string: fewer than three are content; three to five close the
    /// string, the extra one or two being content. A sixth quote is left for the caller to reject.
    ///
    /// - Returns: whether the string is closed.
    private mutating func consumeClosingQuotes(_ quote: UInt8, into buffer: inout [UInt8]) -> Bool {
        var run = 0
        while run < 5 && self.peek() == quote {
            self.advance()
            run &+= 1
        }
        if run < 3 {
            buffer.append(contentsOf: repeatElement(quote, count: run))
            return false
        }
        buffer.append(contentsOf: repeatElement(quote, count: run - 3))
        return true
    }

    /// Parses an escape sequence (the cursor is on the backslash) and appends what it stands for.
    ///
    /// - Parameter multiline: whether a line-ending backslash (which trims the following whitespace and
    ///   newlines) is allowed.
    private mutating func parseEscape(into buffer: inout [UInt8], multiline: Bool) throws(TOMLError) {
        let start = self.position
        self.advance()
        guard let byte = self.peek() else {
            throw self.error("unterminated escape sequence, found end of document")
        }
        switch byte {
        case UInt8(ascii: "b"): buffer.append(0x08)
        case UInt8(ascii: "t"): buffer.append(0x09)
        case UInt8(ascii: "n"): buffer.append(0x0A)
        case UInt8(ascii: "f"): buffer.append(0x0C)
        case UInt8(ascii: "r"): buffer.append(0x0D)
        case UInt8(ascii: "\""): buffer.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): buffer.append(UInt8(ascii: "\\"))
        case UInt8(ascii: "u"), UInt8(ascii: "U"):
            try self.parseUnicodeEscape(into: &buffer, digits: byte == UInt8(ascii: "u") ? 4 : 8, start: start)
            return
        case UInt8(ascii: " ") where multiline, UInt8(ascii: "\t") where multiline,
            UInt8(ascii: "\n") where multiline, UInt8(ascii: "\r") where multiline:
            // Line-ending backslash: only whitespace may follow it on its line.
            self.skipWhitespace()
            guard let next = self.peek(), next == UInt8(ascii: "\n") || next == UInt8(ascii: "\r") else {
                throw TOMLError(
                    "invalid escape: a line-ending backslash may be followed only by whitespace on its line",
                    at: start)
            }
            try self.skipWhitespaceAndNewlines()
            return
        default:
            let shown = byte > 0x20 && byte < 0x7F
                ? "'\\\(Character(Unicode.Scalar(byte)))'" : "'\\' followed by \(self.found)"
            throw TOMLError("invalid escape sequence \(shown) in string; "
                + "valid escapes are \\b \\t \\n \\f \\r \\\" \\\\ \\uXXXX \\UXXXXXXXX", at: start)
        }
        self.advance()
    }

    /// Parses the hex digits of `\uXXXX` or `\UXXXXXXXX` (the cursor is on the `u`/`U`).
    private mutating func parseUnicodeEscape(into buffer: inout [UInt8], digits: Int, start: SourcePosition)
        throws(TOMLError)
    {
        self.advance()
        var value: UInt32 = 0
        for _ in 0..<digits {
            guard let byte = self.peek(), let digit = TOMLParser.hexValue(byte) else {
                throw TOMLError(
                    "invalid unicode escape: \\\(digits == 4 ? "u" : "U") needs \(digits) hexadecimal digits",
                    at: start)
            }
            value = value << 4 | UInt32(digit)
            self.advance()
        }
        guard let scalar = Unicode.Scalar(value) else {
            throw TOMLError(
                "invalid unicode escape: \(TOMLParser.scalarName(value)) is not a Unicode scalar value "
                    + "(surrogates and values above U+10FFFF are not allowed)",
                at: start)
        }
        UTF8.encode(scalar) { buffer.append($0) }
    }

    /// After a line-ending backslash: skips spaces, tabs and newlines.
    private mutating func skipWhitespaceAndNewlines() throws(TOMLError) {
        while let byte = self.peek() {
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"):
                self.advance()
            case UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                try self.consumeNewline()
            default:
                return
            }
        }
    }

    private func controlCharacterInString(_ byte: UInt8, escapable: Bool) -> TOMLError {
        let name = TOMLParser.scalarName(UInt32(byte))
        guard escapable else {
            return self.error("control character \(name) is not allowed in a literal string")
        }
        return self.error("control character \(name) is not allowed in a string; write it as \\u\(name.dropFirst(2))")
    }

    /// The value of a hexadecimal digit, or `nil`.
    @inline(__always)
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte &- UInt8(ascii: "A") &+ 10
        default: return nil
        }
    }
}
