/// The fully defaulted configuration as JSON (`empalinkd --check-config --json`), in the schema's order.
extension AgentConfiguration {
    public var json: JSONValue {
        var sections: [(String, JSONValue)] = []
        for (section, _) in ConfigSchema.sections {
            if section == "wristband" {
                sections.append(("wristband", .array(self.wristbands.map { band in
                    .object([
                        ("serial", .string(band.serial)),
                        ("address", band.address.map(JSONValue.string) ?? .null),
                        ("label", .string(band.label)),
                        ("profile", band.profile.map(JSONValue.string) ?? .null),
                        ("id", .string(band.topicID)),
                    ])
                })))
                continue
            }
            var members: [(String, JSONValue)] = []
            for key in ConfigSchema.keys where key.section == section {
                AgentConfiguration.insert(AgentConfiguration.json(self.resolved[key.path]),
                                          at: key.name.split(separator: ".").map(String.init), into: &members)
            }
            sections.append((section, .object(members)))
        }
        return .object(sections)
    }

    static func json(_ kind: TOMLValue.Kind?) -> JSONValue {
        switch kind {
        case nil: return .null
        case .string(let s)?: return .string(s)
        case .integer(let i)?: return .int(i)
        case .float(let d)?: return .double(d)
        case .boolean(let b)?: return .bool(b)
        case .array(let items)?: return .array(items.map { self.json($0.kind) })
        case .table(let table)?:
            return .object(table.entries.map { ($0.key, self.json($0.value.kind)) })
        }
    }

    /// Inserts `value` at a nested path (`tls.ca_file` → `"tls": {"ca_file": …}`), keeping first-seen order.
    static func insert(_ value: JSONValue, at path: [String], into members: inout [(String, JSONValue)]) {
        guard let head = path.first else { return }
        if path.count == 1 {
            members.append((head, value))
            return
        }
        var nested: [(String, JSONValue)] = []
        if let index = members.firstIndex(where: { $0.0 == head }), case .object(let existing) = members[index].1 {
            nested = existing
            self.insert(value, at: Array(path.dropFirst()), into: &nested)
            members[index].1 = .object(nested)
        } else {
            self.insert(value, at: Array(path.dropFirst()), into: &nested)
            members.append((head, .object(nested)))
        }
    }
}
