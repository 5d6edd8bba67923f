/// TOML 1.0 parser for configuration files, without date/time values (they are a clear error).
///
/// The parser works on the whole document as UTF-8 bytes and reports the first error with its line and column
/// (1-based, columns counted in Unicode scalars). It never traps on input: arithmetic is overflow-checked,
/// indexing is bounds-checked through ``peek(_:)``, and nesting is limited to ``maximumNestingDepth`` so that
/// recursion is bounded. The work is linear in the size of the document.
///
/// The stored properties are the cursor state of one parse; the only public entry points are the static
/// ``parse(_:)-(([UInt8]))`` functions.
public struct TOMLParser {
    /// The deepest nesting of tables and arrays accepted. Deeper documents are an error, not a stack overflow.
    public static let maximumNestingDepth = 128

    /// The message for date/time values, which this configuration format does not support.
    public static let dateTimeMessage =
        "date/time values are not supported in this configuration; quote the value as a string"

    let bytes: [UInt8]
    /// Offset of the next unread byte.
    var index: Int
    /// Line of ``index`` (1-based).
    var line: Int
    /// Column of ``index`` in Unicode scalars (1-based).
    var column: Int
    /// The document under construction, with the bookkeeping for TOML's redefinition rules.
    var tree: Tree
    /// A new number for every `[header]`, `[[header]]` and inline table: tables made by dotted keys may be
    /// extended only from the section that made them.
    var section: Int

    private init(bytes: [UInt8]) {
        self.bytes = bytes
        self.index = 0
        self.line = 1
        self.column = 1
        self.tree = Tree()
        self.section = 0
    }

    /// Parses a whole TOML document.
    ///
    /// - Parameter bytes: the document as UTF-8 bytes; invalid UTF-8 is an error. A byte order mark at the
    ///   start is skipped.
    /// - Returns: the root table.
    /// - Throws: ``TOMLError`` for the first error found, with its position.
    /// - Complexity: O(n) in the size of the document.
    public static func parse(_ bytes: [UInt8]) throws(TOMLError) -> TOMLTable {
        if let error = TOMLParser.validateUTF8(bytes) {
            throw error
        }
        var parser = TOMLParser(bytes: bytes)
        return try parser.parseDocument()
    }

    /// Parses a whole TOML document given as a string.
    ///
    /// - Throws: ``TOMLError`` for the first error found, with its position.
    public static func parse(_ text: String) throws(TOMLError) -> TOMLTable {
        try TOMLParser.parse(Array(text.utf8))
    }

    /// The top level: comments, blank lines, `[header]`, `[[header]]` and `key = value` lines.
    private mutating func parseDocument() throws(TOMLError) -> TOMLTable {
        if self.bytes.count >= 3 && self.bytes[0] == 0xEF && self.bytes[1] == 0xBB && self.bytes[2] == 0xBF {
            // The byte order mark is not part of the text: columns on line 1 start after it.
            self.index = 3
        }
        var current = Tree.rootIndex
        while true {
            self.skipWhitespace()
            guard let byte = self.peek() else { break }
            switch byte {
            case UInt8(ascii: "#"):
                try self.skipComment()
            case UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                try self.consumeNewline()
            case UInt8(ascii: "["):
                let header = try self.parseHeader()
                current = header.table
                try self.expectEndOfLine(after: header.description)
            default:
                let key = try self.parseKeyValue(into: current, section: self.section)
                try self.expectEndOfLine(after: "the value of \(TOMLParser.display(key))")
            }
        }
        return self.tree.materialize(Tree.rootIndex)
    }

    /// Parses `[key]` or `[[key]]` and opens the table it names.
    ///
    /// - Returns: the table that following `key = value` lines go into, and the header as written, for messages.
    private mutating func parseHeader() throws(TOMLError) -> (table: Int, description: String) {
        let start = self.position
        self.advance()
        let isArray = self.peek() == UInt8(ascii: "[")
        if isArray {
            self.advance()
        }
        self.skipWhitespace()
        let key = try self.parseKey()
        let written = isArray ? "[[\(TOMLParser.render(key))]]" : "[\(TOMLParser.render(key))]"
        guard self.peek() == UInt8(ascii: "]") else {
            throw self.error("expected '\(isArray ? "]]" : "]")' to close table header \(written), found \(self.found)")
        }
        self.advance()
        if isArray {
            guard self.peek() == UInt8(ascii: "]") else {
                throw self.error("expected ']]' to close array-of-tables header \(written), found \(self.found)")
            }
            self.advance()
        }
        self.section &+= 1
        let table: Int
        if isArray {
            table = try self.tree.openArrayElement(key, header: start, section: self.section)
        } else {
            table = try self.tree.openTable(key, header: start, section: self.section)
        }
        return (table, "table header \(written)")
    }

    /// Parses `key = value` and stores the value in `table` (creating the tables of a dotted key).
    ///
    /// - Returns: the key, for messages about what follows the value.
    @discardableResult
    mutating func parseKeyValue(into table: Int, section: Int) throws(TOMLError) -> [KeySegment] {
        let key = try self.parseKey()
        guard self.peek() == UInt8(ascii: "=") else {
            throw self.error("expected '=' after key \(TOMLParser.display(key)), found \(self.found)")
        }
        self.advance()
        self.skipWhitespace()
        let depth = self.tree.depth(of: table) &+ key.count
        let value = try self.parseValue(depth: depth)
        try self.tree.insert(value, at: key, into: table, section: section)
        return key
    }

    /// After a header or a value: optional whitespace and comment, then a newline or the end of the document.
    private mutating func expectEndOfLine(after context: @autoclosure () -> String) throws(TOMLError) {
        self.skipWhitespace()
        if self.peek() == UInt8(ascii: "#") {
            try self.skipComment()
        }
        guard let byte = self.peek() else { return }
        guard byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") else {
            throw self.error("expected end of line after \(context()), found \(self.found)")
        }
        try self.consumeNewline()
    }
}
