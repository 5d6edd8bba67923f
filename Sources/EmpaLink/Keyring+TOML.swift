import Config

/// Reading and writing the keyring file.
extension Keyring {
    /// Parses a keyring document.
    ///
    /// - Throws: ``ConfigErrors`` with every problem at its line and column (the same format as the agent
    ///   configuration's errors).
    public static func parse(_ bytes: [UInt8]) throws(ConfigErrors) -> Keyring {
        let document: TOMLTable
        do {
            document = try TOMLParser.parse(bytes)
        } catch {
            throw ConfigErrors([ConfigDiagnostic(error.message, at: error.position)])
        }
        var errors: [ConfigDiagnostic] = []
        var entries: [Entry] = []
        for top in document.entries {
            guard top.key == "key" else {
                errors.append(ConfigDiagnostic(
                    "unknown key \(self.shown(top.key)); a keyring holds only [[key]] tables",
                    at: top.keyPosition))
                continue
            }
            guard case .array(let items) = top.value.kind else {
                errors.append(ConfigDiagnostic("key: expected [[key]] tables", at: top.value.position))
                continue
            }
            for item in items {
                guard case .table(let table) = item.kind else {
                    errors.append(ConfigDiagnostic("key: expected a table", at: item.position))
                    continue
                }
                if let entry = self.entry(table, at: item.position, errors: &errors) { entries.append(entry) }
            }
        }
        guard errors.isEmpty else { throw ConfigErrors(errors) }
        return Keyring(entries: entries)
    }

    static func entry(_ table: TOMLTable, at position: SourcePosition, errors: inout [ConfigDiagnostic]) -> Entry? {
        var digest: [UInt8]?
        var devices: Set<String>??
        var expires: CalendarDay?
        var ok = true
        for field in table.entries {
            switch (field.key, field.value.kind) {
            case ("sha256", .string(let text)):
                guard let bytes = self.bytes(fromHex: text), bytes.count == 32 else {
                    errors.append(ConfigDiagnostic("key.sha256: expected 64 hex digits", at: field.value.position))
                    ok = false
                    continue
                }
                digest = bytes
            case ("devices", .array(let items)):
                var serials: Set<String> = []
                var wildcard = false
                for item in items {
                    guard case .string(let text) = item.kind else {
                        errors.append(ConfigDiagnostic("key.devices: expected strings", at: item.position))
                        ok = false
                        continue
                    }
                    if text == "*" {
                        wildcard = true
                    } else if text.utf8.count == 6, self.bytes(fromHex: text) != nil {
                        serials.insert(text.lowercased())
                    } else {
                        errors.append(ConfigDiagnostic(
                            "key.devices: \(self.shown(text)) is not a serial (6 hex digits) or \"*\"",
                            at: item.position))
                        ok = false
                    }
                }
                devices = .some(wildcard ? nil : serials)
            case ("expires", .string(let text)):
                guard let day = CalendarDay(text) else {
                    errors.append(ConfigDiagnostic("key.expires: expected a date \"YYYY-MM-DD\"", at: field.value.position))
                    ok = false
                    continue
                }
                expires = day
            case ("sha256", _), ("devices", _), ("expires", _):
                errors.append(ConfigDiagnostic("key.\(field.key): expected \(field.key == "devices" ? "an array" : "a string")",
                                               at: field.value.position))
                ok = false
            default:
                errors.append(ConfigDiagnostic(
                    "unknown key \(self.shown(field.key)) in [[key]]; expected sha256, devices or expires",
                    at: field.keyPosition))
                ok = false
            }
        }
        guard ok else { return nil }
        guard let digest else {
            errors.append(ConfigDiagnostic("[[key]] needs sha256", at: position))
            return nil
        }
        guard let devices else {
            errors.append(ConfigDiagnostic("[[key]] needs devices (serials, or [\"*\"] for all)", at: position))
            return nil
        }
        return Entry(digest: digest, devices: devices, expires: expires)
    }

    /// A key or value for a message: quoted, cut to 40 characters so a huge one is not echoed whole.
    static func shown(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard scalars.count > 40 else { return "\"\(text)\"" }
        return "\"" + String(String.UnicodeScalarView(scalars.prefix(37))) + "…\" (\(text.utf8.count) bytes)"
    }

    public static func bytes(fromHex text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = self.nibble(utf8[index]), let low = self.nibble(utf8[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// A `[[key]]` table for `apiKey`, as `empalinkctl key add` appends it.
    public static func entryText(apiKey: String, devices: [String]?, expires: CalendarDay? = nil) -> String? {
        guard let digest = self.sha256(Array(apiKey.utf8)) else { return nil }
        var text = "[[key]]\nsha256 = \"\(self.hex(digest))\"\n"
        let list = devices.map { $0.map { "\"\($0.lowercased())\"" } } ?? ["\"*\""]
        text += "devices = [\(list.joined(separator: ", "))]\n"
        if let expires { text += "expires = \"\(expires)\"\n" }
        return text
    }
}
