import Config

/// Shared helpers for the TOML parser tests.
enum TOMLTestSupport {
    /// Parses `text` and returns its toml-test JSON (compact), the most readable way to state an expected result.
    static func json(_ text: String) throws -> String {
        try TOMLParser.parse(text).tomlTestJSON.serialized()
    }

    /// Parses `bytes` and returns the error, or `nil` when the document is valid.
    static func error(_ bytes: [UInt8]) -> TOMLError? {
        do throws(TOMLError) {
            _ = try TOMLParser.parse(bytes)
            return nil
        } catch {
            return error
        }
    }

    static func error(_ text: String) -> TOMLError? {
        TOMLTestSupport.error(Array(text.utf8))
    }

    /// The value at a dotted path of plain segment names (no quoting), or `nil`.
    static func value(_ table: TOMLTable, _ path: String...) -> TOMLValue? {
        var current = table
        for (offset, name) in path.enumerated() {
            guard let value = current[name] else { return nil }
            if offset == path.count - 1 { return value }
            guard case .table(let next) = value.kind else { return nil }
            current = next
        }
        return nil
    }

    /// The position just after the last byte of `bytes`, computed independently of the parser: lines split at
    /// LF, columns counting the bytes that start a UTF-8 scalar, a leading byte order mark not counted.
    static func endPosition(_ bytes: some Collection<UInt8>) -> SourcePosition {
        var line = 1
        var column = 1
        for (offset, byte) in bytes.enumerated() {
            if offset < 3 && Array(bytes.prefix(3)) == [0xEF, 0xBB, 0xBF] { continue }
            if byte == 0x0A {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        return SourcePosition(line: line, column: column)
    }

    /// The byte offset of a line:column position, computed independently of the parser (BOM not counted).
    static func offset(of position: SourcePosition, in bytes: [UInt8]) -> Int? {
        var line = 1
        var column = 1
        var index = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        while index <= bytes.count {
            if line == position.line && column == position.column { return index }
            guard index < bytes.count else { return nil }
            let byte = bytes[index]
            index += 1
            if byte == 0x0A {
                line += 1
                column = 1
            } else if index >= bytes.count || bytes[index] & 0xC0 != 0x80 {
                column += 1
            }
        }
        return nil
    }

    /// Every value in `table` with the key path leading to it, depth first, including array elements.
    static func walk(_ table: TOMLTable, _ visit: (TOMLTable.Entry?, TOMLValue) -> Void) {
        for entry in table.entries {
            visit(entry, entry.value)
            TOMLTestSupport.walk(entry.value, visit)
        }
    }

    private static func walk(_ value: TOMLValue, _ visit: (TOMLTable.Entry?, TOMLValue) -> Void) {
        switch value.kind {
        case .table(let table):
            TOMLTestSupport.walk(table, visit)
        case .array(let elements):
            for element in elements {
                visit(nil, element)
                TOMLTestSupport.walk(element, visit)
            }
        default:
            break
        }
    }
}
