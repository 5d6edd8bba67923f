/// A TOML table: keys in document order, each with the position of its key.
public struct TOMLTable: Hashable, Sendable {
    public struct Entry: Hashable, Sendable {
        public var key: String
        /// Where the (last segment of the) key is written in the document.
        public var keyPosition: SourcePosition
        public var value: TOMLValue

        public init(key: String, keyPosition: SourcePosition, value: TOMLValue) {
            self.key = key
            self.keyPosition = keyPosition
            self.value = value
        }
    }

    /// The entries in the order their keys first appear.
    public var entries: [Entry]

    public init(entries: [Entry] = []) {
        self.entries = entries
    }

    /// The entry for `key`, if present.
    ///
    /// - Complexity: O(n); configuration tables are small.
    public func entry(_ key: String) -> Entry? {
        self.entries.first { $0.key == key }
    }

    /// The value for `key`, if present.
    public subscript(key: String) -> TOMLValue? {
        self.entry(key)?.value
    }
}

extension TOMLTable {
    /// The table in the toml-test decoder shape (a JSON object, keys in document order); see
    /// ``TOMLValue/tomlTestJSON``.
    public var tomlTestJSON: JSONValue {
        .object(self.entries.map { ($0.key, $0.value.tomlTestJSON) })
    }
}
