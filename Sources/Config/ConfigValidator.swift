/// Checks a parsed TOML document against ``ConfigSchema`` and produces the typed, defaulted configuration.
///
/// Every problem is reported, not just the first: unknown keys (with a "did you mean" hint, because a typo
/// must never fall back to a default silently), wrong types naming the expected type, out-of-range values
/// naming the range, malformed serials and addresses, and rules that span keys.
public enum ConfigValidator {
    /// Validates `document`.
    ///
    /// - Parameters:
    ///   - document: the parsed file.
    ///   - environment: host name and configuration directory for derived defaults and relative paths.
    /// - Returns: the configuration with every default filled in.
    /// - Throws: ``ConfigErrors`` with every problem, sorted by position.
    public static func validate(
        _ document: TOMLTable,
        environment: ConfigEnvironment
    ) throws(ConfigErrors) -> AgentConfiguration {
        var state = State(environment: environment)
        for entry in document.entries {
            state.section(entry)
        }
        state.resolveDefaults()
        state.crossCheck()
        if !state.diagnostics.isEmpty {
            throw ConfigErrors(state.diagnostics.sorted { ($0.position ?? SourcePosition(line: 0, column: 0))
                < ($1.position ?? SourcePosition(line: 0, column: 0)) })
        }
        return AgentConfiguration(resolved: state.values, wristbands: state.wristbands)
    }

    /// Validation in progress: accepted values by dotted path, and the diagnostics so far.
    struct State {
        let environment: ConfigEnvironment
        var values: [String: TOMLValue] = [:]
        var wristbands: [Wristband] = []
        var diagnostics: [ConfigDiagnostic] = []

        struct Wristband {
            var values: [String: TOMLValue]
            var position: SourcePosition
            /// Whether `serial` or `address` was written at all (an invalid one is reported on its own).
            var namesIdentity: Bool
        }

        init(environment: ConfigEnvironment) {
            self.environment = environment
        }

        mutating func error(_ message: String, at position: SourcePosition?) {
            self.diagnostics.append(ConfigDiagnostic(message, at: position))
        }

        mutating func section(_ entry: TOMLTable.Entry) {
            guard ConfigSchema.sections.contains(where: { $0.name == entry.key }) else {
                let hint = ConfigValidator.suggestion(for: entry.key, among: ConfigSchema.sections.map(\.name))
                self.error("unknown section \(ConfigValidator.quoted(entry.key))\(hint)", at: entry.keyPosition)
                return
            }
            if entry.key == "wristband" {
                self.wristbandArray(entry)
                return
            }
            guard case .table(let table) = entry.value.kind else {
                self.error("\(entry.key): expected a table ([\(entry.key)]), found \(ConfigValidator.article(entry.value))",
                           at: entry.value.position)
                return
            }
            var into = self.values
            self.table(table, path: entry.key, into: &into)
            self.values = into
        }

        mutating func wristbandArray(_ entry: TOMLTable.Entry) {
            guard case .array(let items) = entry.value.kind else {
                self.error("wristband: expected [[wristband]] tables, found \(ConfigValidator.article(entry.value))",
                           at: entry.value.position)
                return
            }
            for (index, item) in items.enumerated() {
                guard case .table(let table) = item.kind else {
                    self.error("wristband[\(index + 1)]: expected a table, found \(ConfigValidator.article(item))",
                               at: item.position)
                    continue
                }
                var into: [String: TOMLValue] = [:]
                self.table(table, path: "wristband", into: &into)
                let namesIdentity = table.entry("serial") != nil || table.entry("address") != nil
                self.wristbands.append(Wristband(values: into, position: item.position, namesIdentity: namesIdentity))
            }
        }

        mutating func table(_ table: TOMLTable, path: String, into: inout [String: TOMLValue]) {
            for entry in table.entries {
                let child = path + "." + entry.key
                if !entry.key.contains("."), let key = ConfigSchema.key(child) {
                    if let accepted = self.check(entry.value, against: key) {
                        into[child] = accepted
                    }
                } else if !entry.key.contains("."), ConfigSchema.isTable(child) {
                    guard case .table(let subtable) = entry.value.kind else {
                        self.error("\(child): expected a table, found \(ConfigValidator.article(entry.value))",
                                   at: entry.value.position)
                        continue
                    }
                    self.table(subtable, path: child, into: &into)
                } else {
                    let hint = ConfigValidator.suggestion(for: entry.key, among: ConfigSchema.children(of: path))
                    self.error("unknown key \(ConfigValidator.quoted(entry.key)) in [\(path)]\(hint)",
                               at: entry.keyPosition)
                }
            }
        }

        /// Checks one value; returns it normalised (paths resolved, serials lower-case) or records an error.
        mutating func check(_ value: TOMLValue, against key: ConfigKey) -> TOMLValue? {
            let name = key.path
            func wrongType(_ expected: String) -> TOMLValue? {
                self.error("\(name): expected \(expected), found \(ConfigValidator.article(value))", at: value.position)
                return nil
            }
            switch key.check {
            case .integer(let range):
                guard case .integer(let number) = value.kind else { return wrongType("an integer") }
                guard range.contains(number) else {
                    self.error("\(name): \(number) is out of range; expected \(range.lowerBound) … \(range.upperBound)",
                               at: value.position)
                    return nil
                }
                return value
            case .boolean:
                guard case .boolean = value.kind else { return wrongType("a boolean (true or false)") }
                return value
            case .subsetOf(let allowed):
                guard case .array(let items) = value.kind else { return wrongType("an array of strings") }
                var seen: [String] = []
                var ok = true
                for item in items {
                    guard case .string(let text) = item.kind else {
                        self.error("\(name): expected strings in the array, found \(ConfigValidator.article(item))",
                                   at: item.position)
                        ok = false
                        continue
                    }
                    if !allowed.contains(text) {
                        self.error("\(name): unknown stream \"\(text)\"; expected any of "
                                       + allowed.map { "\"\($0)\"" }.joined(separator: ", "), at: item.position)
                        ok = false
                    } else if seen.contains(text) {
                        self.error("\(name): \"\(text)\" is listed twice", at: item.position)
                        ok = false
                    }
                    seen.append(text)
                }
                return ok ? value : nil
            case .adapters:
                // One name is the same as a list of one: the typed configuration reads a list.
                let items: [TOMLValue]
                switch value.kind {
                case .string: items = [value]
                case .array(let array): items = array
                default: return wrongType("an adapter name or an array of them")
                }
                guard (1...ConfigValidator.maximumAdapters).contains(items.count) else {
                    self.error("\(name): expected 1 … \(ConfigValidator.maximumAdapters) adapters, found "
                                   + "\(items.count)", at: value.position)
                    return nil
                }
                var seen: [String] = []
                for item in items {
                    guard case .string(let text) = item.kind, ConfigValidator.isAdapterName(text) else {
                        let found = if case .string(let text) = item.kind { ConfigValidator.quoted(text) }
                            else { ConfigValidator.article(item) }
                        self.error("\(name): \(found) is not an adapter name; expected \"hci0\", \"hci1\", …",
                                   at: item.position)
                        return nil
                    }
                    guard !seen.contains(text) else {
                        self.error("\(name): \"\(text)\" is listed twice", at: item.position)
                        return nil
                    }
                    seen.append(text)
                }
                return TOMLValue(.array(items), at: value.position)
            default:
                break
            }
            guard case .string(let text) = value.kind else { return wrongType("a string") }
            func invalid(_ message: String) -> TOMLValue? {
                self.error("\(name): \(message)", at: value.position)
                return nil
            }
            let quoted = ConfigValidator.quoted(text)
            switch key.check {
            case .string(let range):
                guard range.contains(text.utf8.count) else {
                    return invalid("\(quoted) has \(text.utf8.count) bytes; expected \(key.check.rangeDescription)")
                }
                guard !text.utf8.contains(0) else { return invalid("must not contain NUL characters") }
                return value
            case .identifier:
                guard ConfigValidator.isIdentifier(text) else {
                    return invalid("\(quoted) is not a valid id; expected 1–64 letters, digits, '.', '_' or '-'")
                }
                return value
            case .oneOf(let allowed):
                guard allowed.contains(text) else {
                    return invalid("expected " + ConfigValidator.alternatives(allowed) + ", found \(quoted)")
                }
                return value
            case .path(let maxBytes):
                guard !text.isEmpty else { return invalid("expected a path, found an empty string") }
                guard !text.utf8.contains(0) else { return invalid("a path must not contain NUL characters") }
                let resolved = text.hasPrefix("/") ? text : self.environment.configDirectory + "/" + text
                if let maxBytes, resolved.utf8.count > maxBytes {
                    return invalid("path \(ConfigValidator.quoted(resolved)) has \(resolved.utf8.count) bytes; "
                                       + "a Unix socket path holds at most \(maxBytes)")
                }
                return TOMLValue(.string(resolved), at: value.position)
            case .serial:
                guard let serial = ConfigValidator.normalizedSerial(text) else {
                    return invalid("\(quoted) is not a serial; expected 6 hex digits like \"9ff167\"")
                }
                return TOMLValue(.string(serial), at: value.position)
            case .address:
                guard let address = ConfigValidator.normalizedAddress(text) else {
                    return invalid("\(quoted) is not a Bluetooth address; expected six hex pairs like "
                                       + "\"00:07:80:9F:F1:67\"")
                }
                return TOMLValue(.string(address), at: value.position)
            case .adapter:
                guard ConfigValidator.isAdapterName(text) else {
                    return invalid("\(quoted) is not an adapter name; expected \"hci0\", \"hci1\", …")
                }
                return value
            case .topicPrefix:
                let levels = text.split(separator: "/", omittingEmptySubsequences: false)
                guard !text.isEmpty, text.utf8.count <= 128, levels.allSatisfy({ !$0.isEmpty }),
                      !text.contains("+"), !text.contains("#"), !text.utf8.contains(0) else {
                    return invalid("\(quoted) is not a topic prefix; expected levels like \"empalink\" or "
                                       + "\"site/ward\" without '+', '#', or empty levels")
                }
                return value
            case .host:
                guard !text.isEmpty, text.utf8.count <= 253,
                      !text.unicodeScalars.contains(where: { $0 == " " || $0 == "/" || $0.value < 0x21 }) else {
                    return invalid("\(quoted) is not a host name or address")
                }
                return value
            case .integer, .boolean, .subsetOf, .adapters:
                return value
            }
        }

        /// Fills in derived defaults that the typed configuration and `--json` report.
        mutating func resolveDefaults() {
            let origin = SourcePosition(line: 0, column: 0)
            if self.values["agent.id"] == nil {
                self.values["agent.id"] = TOMLValue(.string(ConfigValidator.identifier(fromHostname:
                    self.environment.hostname)), at: origin)
            }
            let tlsOn = ["mqtt.tls.ca_file", "mqtt.tls.ca_path", "mqtt.tls.cert_file", "mqtt.tls.key_file"]
                .contains { self.values[$0] != nil }
            if self.values["mqtt.port"] == nil {
                self.values["mqtt.port"] = TOMLValue(.integer(tlsOn ? 8883 : 1883), at: origin)
            }
            if self.values["mqtt.client_id"] == nil, case .string(let id)? = self.values["agent.id"]?.kind {
                self.values["mqtt.client_id"] = TOMLValue(.string("empalink-" + id), at: origin)
            }
            for key in ConfigSchema.keys where key.section != "wristband" && self.values[key.path] == nil {
                if case .value(let kind) = key.defaultValue {
                    self.values[key.path] = TOMLValue(kind, at: origin)
                }
            }
            for index in self.wristbands.indices where self.wristbands[index].values["wristband.label"] == nil {
                self.wristbands[index].values["wristband.label"] = TOMLValue(.string(""), at: origin)
            }
        }

        /// Rules that involve more than one key.
        mutating func crossCheck() {
            func integer(_ path: String) -> (Int64, SourcePosition)? {
                guard let value = self.values[path], case .integer(let number) = value.kind else { return nil }
                return (number, value.position)
            }
            if let (initial, _) = integer("bluetooth.reconnect_initial_s"),
               let (maximum, position) = integer("bluetooth.reconnect_max_s"), maximum < initial {
                self.error("bluetooth.reconnect_max_s: \(maximum) is less than reconnect_initial_s (\(initial))",
                           at: position)
            }
            if let (window, _) = integer("bluetooth.background_scan_window_s"),
               let (interval, position) = integer("bluetooth.background_scan_interval_s"), interval < window {
                self.error("bluetooth.background_scan_interval_s: \(interval) is shorter than "
                               + "background_scan_window_s (\(window))", at: position)
            }
            if let (maximum, _) = integer("spool.max_bytes"),
               let (segment, position) = integer("spool.segment_bytes"), segment > maximum {
                self.error("spool.segment_bytes: \(segment) is larger than spool.max_bytes (\(maximum))", at: position)
            }
            if let key = self.values["auth.api_key"], self.values["auth.api_key_file"] != nil {
                self.error("auth.api_key: set either api_key or api_key_file, not both", at: key.position)
            }
            if let file = self.values["mqtt.password_file"], self.values["mqtt.username"] == nil {
                self.error("mqtt.password_file: a password needs mqtt.username", at: file.position)
            }
            // `insecure` only relaxes TLS's checks; without TLS it would leave the operator believing the link is
            // encrypted (with its checks off), when it is plain TCP.
            if let insecure = self.values["mqtt.tls.insecure"], case .boolean(true) = insecure.kind,
               !["mqtt.tls.ca_file", "mqtt.tls.ca_path", "mqtt.tls.cert_file", "mqtt.tls.key_file"]
                   .contains(where: { self.values[$0] != nil }) {
                self.error("mqtt.tls.insecure: has no effect without TLS; TLS is on only with tls.ca_file, "
                               + "tls.ca_path or tls.cert_file and tls.key_file", at: insecure.position)
            }
            let cert = self.values["mqtt.tls.cert_file"]
            let key = self.values["mqtt.tls.key_file"]
            if let cert, key == nil {
                self.error("mqtt.tls.cert_file: a client certificate needs tls.key_file", at: cert.position)
            } else if let key, cert == nil {
                self.error("mqtt.tls.key_file: a client key needs tls.cert_file", at: key.position)
            }
            // SPEC §18: the board id is a topic segment beside `P/fleet/…`; `fleet` would put the board's own
            // topics (`P/fleet/<S>/…`) inside the fleet's tree. (`agent.id` is an identifier by its type already.)
            if let flag = self.values["fleet.enabled"], case .boolean(true) = flag.kind,
               case .string(let id)? = self.values["agent.id"]?.kind, id == "fleet" {
                let position = self.values["agent.id"].map(\.position).flatMap { $0.line > 0 ? $0 : nil }
                self.error("agent.id: \"fleet\" cannot name a board in fleet mode (its topics would be "
                               + "P/fleet/…); choose another id", at: position ?? flag.position)
            }
            self.checkWristbands()
        }

        mutating func checkWristbands() {
            var seen: [String: SourcePosition] = [:]
            for index in self.wristbands.indices {
                let band = self.wristbands[index]
                let serial = band.values["wristband.serial"]
                let address = band.values["wristband.address"]
                let label = "wristband[\(index + 1)]"
                var derived: String?
                if case .string(let text)? = address?.kind {
                    derived = ConfigValidator.serial(ofAddress: text)
                }
                switch (serial?.kind, derived) {
                case (nil, nil):
                    if !band.namesIdentity {
                        self.error("\(label): needs a serial or an address", at: band.position)
                    }
                    continue
                case (nil, let derived?):
                    self.wristbands[index].values["wristband.serial"] = TOMLValue(.string(derived),
                                                                                  at: band.position)
                case (.string(let given)?, let derived?) where given != derived:
                    self.error("\(label): serial \"\(given)\" does not match address (its serial is \"\(derived)\")",
                               at: serial?.position)
                    continue
                default:
                    break
                }
                guard case .string(let id)? = self.wristbands[index].values["wristband.serial"]?.kind else { continue }
                if let first = seen[id] {
                    self.error("\(label): wristband \"\(id)\" is listed twice (first at \(first))", at: band.position)
                } else {
                    seen[id] = band.position
                }
                // A configured id names the device's topics: it must not collide with another entry's.
                if case .string(let topic)? = band.values["wristband.id"]?.kind, topic != id {
                    if let first = seen[topic] {
                        self.error("\(label): id \"\(topic)\" is already a wristband's serial or id (at \(first))",
                                   at: band.values["wristband.id"]?.position)
                    } else {
                        seen[topic] = band.position
                    }
                }
            }
        }
    }
}
