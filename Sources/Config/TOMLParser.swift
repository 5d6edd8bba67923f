/// TOML 1.0 parser. (Placeholder: the full parser lands with the TOML work item.)
public enum TOMLParser {
    /// Parses a whole TOML document.
    ///
    /// - Parameter bytes: the document as UTF-8 bytes; invalid UTF-8 is an error.
    /// - Returns: the root table.
    /// - Throws: ``TOMLError`` for the first error found, with its position.
    public static func parse(_ bytes: [UInt8]) throws(TOMLError) -> TOMLTable {
        throw TOMLError("not implemented", at: SourcePosition(line: 1, column: 1))
    }
}
