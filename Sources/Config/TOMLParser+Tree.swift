extension TOMLParser {
    /// The document under construction: tables in an arena, each remembering how it was made, which is what
    /// TOML's rules against redefinition depend on.
    ///
    /// - A `[header]` defines a table once. Tables named on the way (`a` in `[a.b]`) are implicit and may be
    ///   defined by a header later, once.
    /// - Dotted keys (`a.b = 1`) make tables that only the same section may extend with more dotted keys; a header
    ///   may not define them again but may add sub-tables beneath them.
    /// - `[[header]]` appends a table to an array of tables; arrays written as values (`a = []`) are static.
    /// - Inline tables and arrays written as values are complete when written: nothing may extend them.
    ///
    /// Python's `tomllib` follows the same rules (with an implicit table extended by dotted keys from an
    /// ancestor's section becoming a dotted table), which the conformance tests check.
    struct Tree {
        /// How a table came to exist.
        enum Origin {
            case root
            case header
            case implicit
            case dotted
            case arrayElement
            case inline
        }

        /// What a key holds while the document is built.
        enum Slot {
            /// A finished value: scalar, static array or inline table.
            case value(TOMLValue)
            /// A table still open for the rules above.
            case table(Int)
            /// An array of tables made by `[[header]]`; its position is the first header's.
            case tableArray([Int], SourcePosition)
        }

        struct Entry {
            var key: String
            var keyPosition: SourcePosition
            var slot: Slot
        }

        struct Table {
            var entries: [Entry] = []
            var index: [String: Int] = [:]
            var origin: Origin
            var position: SourcePosition
            var depth: Int
            var section: Int
        }

        static let rootIndex = 0

        private(set) var tables: [Table]

        init() {
            self.tables = [Table(origin: .root, position: SourcePosition(line: 1, column: 1), depth: 0, section: 0)]
        }

        func depth(of table: Int) -> Int {
            self.tables[table].depth
        }

        /// A new, empty inline table to fill with its key/value pairs.
        mutating func makeInlineTable(at position: SourcePosition, depth: Int) -> Int {
            self.tables.append(Table(origin: .inline, position: position, depth: depth, section: 0))
            return self.tables.count &- 1
        }

        /// Opens `[key]`.
        ///
        /// - Returns: the table for the key/value pairs that follow.
        /// - Throws: ``TOMLError`` when the table exists already or a key on the way is not a table.
        mutating func openTable(_ key: [KeySegment], header: SourcePosition, section: Int) throws(TOMLError) -> Int {
            let parent = try self.walkHeader(key, header: header, section: section, isArray: false)
            guard let last = key.last else { return parent }
            let written = "[\(TOMLParser.render(key))]"
            guard let existing = self.tables[parent].index[last.name] else {
                return try self.addTable(last, to: parent, origin: .header, position: header, section: section)
            }
            let entry = self.tables[parent].entries[existing]
            switch entry.slot {
            case .table(let child):
                switch self.tables[child].origin {
                case .implicit:
                    self.tables[child].origin = .header
                    self.tables[child].position = header
                    self.tables[child].section = section
                    self.tables[parent].entries[existing].keyPosition = last.position
                    return child
                case .dotted:
                    throw TOMLError(
                        "table \(written) was already defined with dotted keys at \(self.tables[child].position)",
                        at: header)
                default:
                    throw TOMLError(
                        "table \(written) defined twice (first at \(self.tables[child].position))", at: header)
                }
            case .tableArray(_, let position):
                throw TOMLError(
                    "table \(written) was already defined as an array of tables at \(position)", at: header)
            case .value(let value):
                throw self.notATable(key, value: value, at: header)
            }
        }

        /// Opens `[[key]]`: appends a new table to the array of tables.
        ///
        /// - Returns: the new table.
        /// - Throws: ``TOMLError`` when the key holds anything but an array of tables.
        mutating func openArrayElement(_ key: [KeySegment], header: SourcePosition, section: Int)
            throws(TOMLError) -> Int
        {
            let parent = try self.walkHeader(key, header: header, section: section, isArray: true)
            guard let last = key.last else { return parent }
            let depth = self.tables[parent].depth &+ 1
            try self.checkDepth(depth, at: last.position)
            let element = Table(origin: .arrayElement, position: header, depth: depth, section: section)
            guard let existing = self.tables[parent].index[last.name] else {
                self.tables.append(element)
                let child = self.tables.count &- 1
                self.append(Entry(key: last.name, keyPosition: last.position, slot: .tableArray([child], header)),
                    to: parent)
                return child
            }
            switch self.tables[parent].entries[existing].slot {
            case .tableArray(var elements, let position):
                self.tables.append(element)
                let child = self.tables.count &- 1
                // Release the slot's reference first so that the append does not copy the whole array.
                self.tables[parent].entries[existing].slot = .value(TOMLValue(.boolean(false), at: position))
                elements.append(child)
                self.tables[parent].entries[existing].slot = .tableArray(elements, position)
                return child
            case .table(let child):
                throw TOMLError(
                    "[[\(TOMLParser.shortened(TOMLParser.render(key)))]] cannot append to "
                        + "\(TOMLParser.display(key)): it is a table (defined at \(self.tables[child].position)), "
                        + "not an array of tables", at: header)
            case .value(let value):
                if case .array = value.kind {
                    throw TOMLError(
                        "[[\(TOMLParser.shortened(TOMLParser.render(key)))]] cannot append to the static array "
                            + "\(TOMLParser.display(key)) defined at \(value.position); only arrays made with "
                            + "[[...]] can be extended",
                        at: header)
                }
                throw self.notATable(key, value: value, at: header)
            }
        }

        /// Follows all but the last segment of a header's key, creating implicit tables.
        ///
        /// - Returns: the table that will hold the last segment.
        private mutating func walkHeader(_ key: [KeySegment], header: SourcePosition, section: Int, isArray: Bool)
            throws(TOMLError) -> Int
        {
            var current = Tree.rootIndex
            for (offset, segment) in key.dropLast().enumerated() {
                guard let existing = self.tables[current].index[segment.name] else {
                    current = try self.addTable(
                        segment, to: current, origin: .implicit, position: segment.position, section: section)
                    continue
                }
                let entry = self.tables[current].entries[existing]
                switch entry.slot {
                case .table(let child):
                    current = child
                case .tableArray(let elements, _):
                    // `[a.b]` after `[[a]]` goes into the last table of the array.
                    guard let last = elements.last else { return current }
                    current = last
                case .value(let value):
                    let path = Array(key.prefix(offset &+ 1))
                    throw self.notATable(path, value: value, at: segment.position)
                }
            }
            return current
        }

        /// Stores `value` under the dotted `key` in `table`, creating the tables of the dotted key.
        ///
        /// - Throws: ``TOMLError`` for a duplicate key, or a dotted key reaching into a table it may not extend.
        mutating func insert(_ value: TOMLValue, at key: [KeySegment], into table: Int, section: Int)
            throws(TOMLError)
        {
            var current = table
            for (offset, segment) in key.dropLast().enumerated() {
                guard let existing = self.tables[current].index[segment.name] else {
                    current = try self.addTable(
                        segment, to: current, origin: .dotted, position: segment.position, section: section)
                    continue
                }
                let entry = self.tables[current].entries[existing]
                let path = Array(key.prefix(offset &+ 1))
                switch entry.slot {
                case .table(let child):
                    let origin = self.tables[child].origin
                    if origin == .implicit {
                        // Named by a deeper header but never defined: dotted keys of this section define it.
                        self.tables[child].origin = .dotted
                        self.tables[child].section = section
                        self.tables[child].position = segment.position
                    } else if !(origin == .dotted && self.tables[child].section == section) {
                        let how = origin == .dotted ? "with dotted keys in another section" : "by a table header"
                        throw TOMLError(
                            "dotted key \(TOMLParser.display(key)) cannot add to table \(TOMLParser.display(path)), "
                                + "which was defined \(how) at \(self.tables[child].position)",
                            at: segment.position)
                    }
                    current = child
                case .tableArray(_, let position):
                    throw TOMLError(
                        "dotted key \(TOMLParser.display(key)) cannot add to the array of tables "
                            + "\(TOMLParser.display(path)) defined at \(position)", at: segment.position)
                case .value(let value):
                    throw self.notATable(path, value: value, at: segment.position)
                }
            }
            guard let last = key.last else { return }
            if let existing = self.tables[current].index[last.name] {
                let first = self.tables[current].entries[existing].keyPosition
                throw TOMLError("duplicate key \(TOMLParser.display(key)) (first defined at \(first))",
                    at: last.position)
            }
            self.append(Entry(key: last.name, keyPosition: last.position, slot: .value(value)), to: current)
        }

        /// Builds the public table for `index` and everything beneath it.
        ///
        /// Recursion is bounded by ``TOMLParser/maximumNestingDepth``.
        func materialize(_ index: Int) -> TOMLTable {
            var result = TOMLTable()
            result.entries.reserveCapacity(self.tables[index].entries.count)
            for entry in self.tables[index].entries {
                let value: TOMLValue
                switch entry.slot {
                case .value(let finished):
                    value = finished
                case .table(let child):
                    value = TOMLValue(.table(self.materialize(child)), at: self.tables[child].position)
                case .tableArray(let elements, let position):
                    let tables = elements.map { TOMLValue(.table(self.materialize($0)), at: self.tables[$0].position) }
                    value = TOMLValue(.array(tables), at: position)
                }
                result.entries.append(TOMLTable.Entry(key: entry.key, keyPosition: entry.keyPosition, value: value))
            }
            return result
        }

        private mutating func addTable(
            _ segment: KeySegment, to parent: Int, origin: Origin, position: SourcePosition, section: Int
        ) throws(TOMLError) -> Int {
            let depth = self.tables[parent].depth &+ 1
            try self.checkDepth(depth, at: segment.position)
            self.tables.append(Table(origin: origin, position: position, depth: depth, section: section))
            let child = self.tables.count &- 1
            self.append(Entry(key: segment.name, keyPosition: segment.position, slot: .table(child)), to: parent)
            return child
        }

        private mutating func append(_ entry: Entry, to table: Int) {
            self.tables[table].index[entry.key] = self.tables[table].entries.count
            self.tables[table].entries.append(entry)
        }

        private func checkDepth(_ depth: Int, at position: SourcePosition) throws(TOMLError) {
            if depth > TOMLParser.maximumNestingDepth {
                throw TOMLError(
                    "nesting deeper than \(TOMLParser.maximumNestingDepth) levels of tables and arrays", at: position)
            }
        }

        private func notATable(_ key: [KeySegment], value: TOMLValue, at position: SourcePosition) -> TOMLError {
            if case .table = value.kind {
                return TOMLError(
                    "cannot extend inline table \(TOMLParser.display(key)) defined at \(value.position); "
                        + "inline tables are complete when written", at: position)
            }
            return TOMLError(
                "key \(TOMLParser.display(key)) is already \(Tree.article(value.typeName)) \(value.typeName) "
                    + "(defined at \(value.position)), not a table", at: position)
        }

        private static func article(_ word: String) -> String {
            word.first.map { "aeiou".contains($0) } == true ? "an" : "a"
        }
    }
}
