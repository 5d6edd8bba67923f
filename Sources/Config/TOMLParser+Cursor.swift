/// Reading the document: the cursor, its position, whitespace, comments, newlines and error construction.
extension TOMLParser {
    /// The byte at the cursor, or `nil` at the end of the document.
    @inline(__always)
    func peek() -> UInt8? {
        self.index < self.bytes.count ? self.bytes[self.index] : nil
    }

    /// The byte `offset` bytes after the cursor, or `nil` past the end of the document.
    @inline(__always)
    func peek(_ offset: Int) -> UInt8? {
        let (at, overflow) = self.index.addingReportingOverflow(offset)
        return !overflow && at >= 0 && at < self.bytes.count ? self.bytes[at] : nil
    }

    /// Moves past one byte, keeping line and column (in Unicode scalars) up to date.
    @inline(__always)
    mutating func advance() {
        guard self.index < self.bytes.count else { return }
        let byte = self.bytes[self.index]
        self.index &+= 1
        if byte == UInt8(ascii: "\n") {
            self.line &+= 1
            self.column = 1
        } else if byte & 0xC0 != 0x80 {
            // UTF-8 continuation bytes do not start a scalar; everything else does.
            self.column &+= 1
        }
    }

    /// The position of the cursor.
    var position: SourcePosition {
        SourcePosition(line: self.line, column: self.column)
    }

    /// An error at the cursor.
    func error(_ message: String) -> TOMLError {
        TOMLError(message, at: self.position)
    }

    /// What is at the cursor, for "found …" in messages.
    var found: String {
        guard let byte = self.peek() else { return "end of document" }
        switch byte {
        case UInt8(ascii: "\n"): return "end of line"
        case UInt8(ascii: "\r"): return "carriage return"
        case UInt8(ascii: "\t"): return "tab"
        case UInt8(ascii: "'"): return "\"'\""
        default: break
        }
        if TOMLParser.isControl(byte) {
            return "control character \(TOMLParser.scalarName(UInt32(byte)))"
        }
        var end = self.index &+ 1
        while end < self.bytes.count && end - self.index < 4 && self.bytes[end] & 0xC0 == 0x80 {
            end &+= 1
        }
        let text = String(decoding: self.bytes[self.index..<end], as: UTF8.self)
        if byte >= 0x80, let scalar = text.unicodeScalars.first {
            // Non-ASCII may be invisible or break the line (a byte order mark, U+2028): name it instead.
            if !TOMLParser.isPrintable(scalar) {
                return TOMLParser.scalarName(scalar.value)
            }
            return "'\(text)' (\(TOMLParser.scalarName(scalar.value)))"
        }
        return "'\(text)'"
    }

    /// `U+0001`: a scalar's name in messages.
    static func scalarName(_ value: UInt32) -> String {
        let hex = String(value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }

    /// Whether a scalar can be shown as itself in a one-line message: not a control, format, separator,
    /// private-use or unassigned character.
    static func isPrintable(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .spaceSeparator, .surrogate, .privateUse,
            .unassigned:
            return scalar == " "
        default:
            return true
        }
    }

    /// Control characters TOML forbids in comments and strings: U+0000–U+001F except tab, and U+007F.
    @inline(__always)
    static func isControl(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != UInt8(ascii: "\t")) || byte == 0x7F
    }

    /// Skips spaces and tabs (TOML's only whitespace within a line).
    @inline(__always)
    mutating func skipWhitespace() {
        while let byte = self.peek(), byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
            self.advance()
        }
    }

    /// Skips a `#` comment up to (not including) the end of the line.
    ///
    /// - Throws: ``TOMLError`` for a control character in the comment.
    mutating func skipComment() throws(TOMLError) {
        self.advance()
        while let byte = self.peek() {
            if byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") {
                return
            }
            if TOMLParser.isControl(byte) {
                throw self.error("control character \(TOMLParser.scalarName(UInt32(byte))) is not allowed in a comment")
            }
            self.advance()
        }
    }

    /// Consumes `\n` or `\r\n` at the cursor.
    ///
    /// - Throws: ``TOMLError`` for a carriage return not followed by a line feed.
    mutating func consumeNewline() throws(TOMLError) {
        if self.peek() == UInt8(ascii: "\r") {
            guard self.peek(1) == UInt8(ascii: "\n") else {
                throw self.error("carriage return must be followed by a line feed (bare CR is not a line ending)")
            }
            self.advance()
        }
        self.advance()
    }

    /// Inside arrays: skips whitespace, newlines and comments.
    mutating func skipWhitespaceCommentsAndNewlines() throws(TOMLError) {
        while let byte = self.peek() {
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"):
                self.advance()
            case UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                try self.consumeNewline()
            case UInt8(ascii: "#"):
                try self.skipComment()
            default:
                return
            }
        }
    }
}
