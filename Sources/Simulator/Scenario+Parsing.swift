import Config

extension Scenario {
    /// Parses a scenario file (TOML; see Docs/simulator.md for the tables and keys).
    ///
    /// - Throws: ``ScenarioError`` for TOML syntax errors, unknown tables or keys, wrong types and values out
    ///   of range, each with its line and column.
    public static func parse(_ text: String) throws(ScenarioError) -> Scenario {
        let document: TOMLTable
        do {
            document = try TOMLParser.parse(text)
        } catch {
            throw ScenarioError(error.message, at: error.position)
        }
        var scenario = Scenario()
        var routePosition: SourcePosition?
        for entry in document.entries {
            switch entry.key {
            case "timing":
                try scenario.parseTiming(try Self.table(entry.value, "timing"))
            case "bluetoothd":
                try scenario.parseBluetoothd(try Self.table(entry.value, "bluetoothd"))
            case "physiology":
                let table = try Self.table(entry.value, "physiology")
                scenario.physiology = try Self.physiology(table, base: scenario.physiology, allowRange: true,
                                                          scenario: &scenario)
            case "device":
                for item in try Self.tables(entry.value, "device") {
                    guard let indexValue = item["index"] else {
                        throw ScenarioError("[[device]] needs an integer 'index' (1-based)", at: entry.value.position)
                    }
                    let index = Int(try Self.integer(indexValue, "index", in: 1...10_000))
                    var rest = item
                    rest.entries.removeAll { $0.key == "index" }
                    if let kind = rest["kind"] {
                        let name = try Self.string(kind, "kind")
                        guard let parsed = SimulatedDeviceKind(rawValue: name) else {
                            throw ScenarioError("kind must be \"e4\" or \"hrs\", not \"\(name)\"", at: kind.position)
                        }
                        scenario.kinds[index] = parsed
                        rest.entries.removeAll { $0.key == "kind" }
                    }
                    if let route = rest.entry("route") {
                        scenario.routes[index] = try Self.route(route.value)
                        routePosition = routePosition ?? route.keyPosition
                        rest.entries.removeAll { $0.key == "route" }
                    }
                    if rest["heart_rate"] != nil { scenario.explicitHeartRates.insert(index) }
                    var ignored = scenario
                    scenario.devices[index] = try Self.physiology(rest, base: scenario.physiology, allowRange: false,
                                                                  scenario: &ignored)
                }
            case "fault":
                for item in try Self.tables(entry.value, "fault") {
                    scenario.faults.append(try Self.fault(item, at: entry.value.position))
                }
            case "hostile":
                for item in try Self.tables(entry.value, "hostile") { scenario.hostile.append(try Self.hostile(item)) }
            case "ward":
                scenario.ward = try Self.ward(try Self.table(entry.value, "ward"), at: entry.keyPosition)
            default:
                throw ScenarioError("unknown table '\(entry.key)' (expected timing, bluetoothd, physiology, device, "
                                    + "fault, hostile, ward)", at: entry.keyPosition)
            }
        }
        if let routePosition, scenario.ward == nil {
            throw ScenarioError("'route' needs a [ward] (run with --ward)", at: routePosition)
        }
        // A [[device]] table copies [physiology] as it stands at that point of the file: write [physiology] first.
        scenario.faults.sort { $0.at < $1.at }
        return scenario
    }

    private mutating func parseTiming(_ table: TOMLTable) throws(ScenarioError) {
        for entry in table.entries {
            let v = entry.value
            switch entry.key {
            case "connect_ms": self.timing.connectMilliseconds = Int(try Self.integer(v, entry.key, in: 0...60_000))
            case "services_ms": self.timing.servicesMilliseconds = Int(try Self.integer(v, entry.key, in: 0...60_000))
            case "disconnect_ms":
                self.timing.disconnectMilliseconds = Int(try Self.integer(v, entry.key, in: 0...60_000))
            case "connect_timeout_s": self.timing.connectTimeoutSeconds = try Self.number(v, entry.key, in: 0...600)
            case "temporary_timeout_s":
                self.timing.temporaryTimeoutSeconds = try Self.number(v, entry.key, in: 0...86_400)
            case "monitor_lost_s": self.timing.monitorLostSeconds = try Self.number(v, entry.key, in: 0...3600)
            case "tick_ms": self.timing.tickMilliseconds = Int(try Self.integer(v, entry.key, in: 5...1000))
            case "link_down_ms":
                self.timing.linkDownMilliseconds = Int(try Self.integer(v, entry.key, in: 0...60_000))
            default:
                throw ScenarioError("unknown key 'timing.\(entry.key)'", at: entry.keyPosition)
            }
        }
    }

    private mutating func parseBluetoothd(_ table: TOMLTable) throws(ScenarioError) {
        for entry in table.entries {
            let v = entry.value
            switch entry.key {
            // 23 is ATT's minimum, 517 the largest MTU an exchange can give (BT_ATT_MAX_LE_MTU).
            case "mtu": self.bluetoothd.attMTU = UInt16(try Self.integer(v, entry.key, in: 23...517))
            case "connected_signal": self.bluetoothd.signalsConnected = try Self.boolean(v, entry.key)
            case "scan_restart_s": self.bluetoothd.scanRestartSeconds = try Self.number(v, entry.key, in: 0...3600)
            case "services_resolved_early": self.bluetoothd.resolvesBeforeExport = try Self.boolean(v, entry.key)
            case "late_export_ms":
                self.bluetoothd.lateExportMilliseconds = Int(try Self.integer(v, entry.key, in: 0...60_000))
            case "acquire_notify_ms":
                self.bluetoothd.acquireNotifyMilliseconds = Int(try Self.integer(v, entry.key, in: 0...60_000))
            case "omit_characteristics":
                self.bluetoothd.omittedCharacteristics = try Self.characteristics(v, entry.key)
            default:
                throw ScenarioError("unknown key 'bluetoothd.\(entry.key)'", at: entry.keyPosition)
            }
        }
    }

    private static func physiology(_ table: TOMLTable, base: PhysiologyParameters, allowRange: Bool,
                                   scenario: inout Scenario) throws(ScenarioError) -> PhysiologyParameters {
        var p = base
        var rangeMin: Double?
        var rangeMax: Double?
        for entry in table.entries {
            let v = entry.value
            let key = entry.key
            switch key {
            case "heart_rate":
                p.heartRate = try Self.number(v, key, in: PhysiologyParameters.heartRateRange)
                if allowRange { scenario.heartRateRange = nil }
            case "heart_rate_min" where allowRange:
                rangeMin = try Self.number(v, key, in: PhysiologyParameters.heartRateRange)
            case "heart_rate_max" where allowRange:
                rangeMax = try Self.number(v, key, in: PhysiologyParameters.heartRateRange)
            case "variability": p.variability = try Self.number(v, key, in: 0...0.3)
            case "motion_per_hour": p.motionPerHour = try Self.number(v, key, in: 0...3600)
            case "walks_per_hour": p.walksPerHour = try Self.number(v, key, in: 0...60)
            case "eda_tonic": p.edaTonic = try Self.number(v, key, in: 0.05...60)
            case "responses_per_minute": p.responsesPerMinute = try Self.number(v, key, in: 0...60)
            case "temperature": p.temperature = try Self.number(v, key, in: 20...42)
            case "battery_start": p.batteryStart = try Self.number(v, key, in: 0...100)
            case "battery_drain_per_hour": p.batteryDrainPerHour = try Self.number(v, key, in: 0...6000)
            case "tags_per_hour": p.tagsPerHour = try Self.number(v, key, in: 0...3600)
            case "contact_loss_per_hour": p.contactLossPerHour = try Self.number(v, key, in: 0...3600)
            default:
                throw ScenarioError("unknown key '\(key)' in \(allowRange ? "[physiology]" : "[[device]]")",
                                    at: entry.keyPosition)
            }
        }
        if rangeMin != nil || rangeMax != nil {
            let low = rangeMin ?? 55
            let high = rangeMax ?? max(low, 85)
            guard low <= high else {
                throw ScenarioError("heart_rate_min must not exceed heart_rate_max", at: table.entries[0].keyPosition)
            }
            scenario.heartRateRange = low...high
        }
        return p
    }

    private static func fault(_ table: TOMLTable, at position: SourcePosition) throws(ScenarioError) -> ScheduledFault {
        var at: Double?
        var action: String?
        var device = "*"
        var seconds = 0.0
        var rate = 0.0
        var method = ""
        var name = ""
        var message = ""
        var count = 1
        var adapter = 0
        for entry in table.entries {
            let v = entry.value
            switch entry.key {
            case "at_s": at = try Self.number(v, entry.key, in: 0...1e9)
            case "action": action = try Self.string(v, entry.key)
            case "device": device = try Self.string(v, entry.key)
            case "duration_s": seconds = try Self.number(v, entry.key, in: 0...1e9)
            case "rate": rate = try Self.number(v, entry.key, in: 0...1)
            case "method": method = try Self.string(v, entry.key)
            case "error": name = try Self.string(v, entry.key)
            case "message": message = try Self.string(v, entry.key)
            case "count": count = Int(try Self.integer(v, entry.key, in: 1...1_000_000))
            case "adapter":
                let text = try Self.string(v, entry.key)
                guard let index = SimulatedAdapter.index(named: text, count: SimulatedAdapter.maximum) else {
                    throw ScenarioError("'adapter' must name an adapter hci0 to hci7", at: v.position)
                }
                adapter = index
            default: throw ScenarioError("unknown key '\(entry.key)' in [[fault]]", at: entry.keyPosition)
            }
        }
        guard let at else { throw ScenarioError("[[fault]] needs 'at_s' (seconds after start)", at: position) }
        let kind: FaultAction
        switch action {
        case "disconnect"?: kind = .disconnect(device: device)
        case "out_of_range"?: kind = .outOfRange(device: device, seconds: seconds)
        case "packet_loss"?: kind = .packetLoss(device: device, rate: rate)
        case "corruption"?: kind = .corruption(device: device, rate: rate)
        case "power_off"?: kind = .powerOff(seconds: seconds, adapter: adapter)
        case "restart"?: kind = .restart(seconds: seconds)
        case "tag"?: kind = .tag(device: device)
        case "error"?:
            guard !method.isEmpty, name.hasPrefix("org.") else {
                throw ScenarioError("an 'error' fault needs 'method' and a D-Bus error name in 'error'", at: position)
            }
            kind = .error(method: method, name: name, message: message, count: count)
        default:
            throw ScenarioError("[[fault]] 'action' must be one of disconnect, out_of_range, packet_loss, corruption, "
                                + "power_off, restart, tag, error", at: position)
        }
        return ScheduledFault(at: at, action: kind)
    }

    // MARK: Typed values

    static func table(_ value: TOMLValue, _ name: String) throws(ScenarioError) -> TOMLTable {
        guard case .table(let table) = value.kind else {
            throw ScenarioError("'\(name)' must be a table, found \(value.typeName)", at: value.position)
        }
        return table
    }

    static func tables(_ value: TOMLValue, _ name: String) throws(ScenarioError) -> [TOMLTable] {
        guard case .array(let items) = value.kind else {
            throw ScenarioError("'\(name)' must be an array of tables ([[\(name)]]), found \(value.typeName)",
                                at: value.position)
        }
        var out: [TOMLTable] = []
        for item in items {
            out.append(try Self.table(item, name))
        }
        return out
    }

    static func number(_ value: TOMLValue, _ key: String, in range: ClosedRange<Double>)
        throws(ScenarioError) -> Double
    {
        let number: Double
        switch value.kind {
        case .integer(let i): number = Double(i)
        case .float(let f): number = f
        default: throw ScenarioError("'\(key)' must be a number, found \(value.typeName)", at: value.position)
        }
        guard range.contains(number) else {
            throw ScenarioError("'\(key)' must be in \(range.lowerBound)…\(range.upperBound)", at: value.position)
        }
        return number
    }

    static func integer(_ value: TOMLValue, _ key: String, in range: ClosedRange<Int64>)
        throws(ScenarioError) -> Int64
    {
        guard case .integer(let i) = value.kind else {
            throw ScenarioError("'\(key)' must be an integer, found \(value.typeName)", at: value.position)
        }
        guard range.contains(i) else {
            throw ScenarioError("'\(key)' must be in \(range.lowerBound)…\(range.upperBound)", at: value.position)
        }
        return i
    }

    static func boolean(_ value: TOMLValue, _ key: String) throws(ScenarioError) -> Bool {
        guard case .boolean(let b) = value.kind else {
            throw ScenarioError("'\(key)' must be true or false, found \(value.typeName)", at: value.position)
        }
        return b
    }

    /// An array of characteristic names (``BluetoothdBehaviour/characteristicNames``) as their 16-bit UUIDs.
    private static func characteristics(_ value: TOMLValue, _ key: String) throws(ScenarioError) -> Set<UInt16> {
        let names = BluetoothdBehaviour.characteristicNames
        guard case .array(let items) = value.kind else {
            throw ScenarioError("'\(key)' must be an array of names, found \(value.typeName)", at: value.position)
        }
        var out: Set<UInt16> = []
        for item in items {
            let name = try Self.string(item, key)
            guard let uuid16 = names.first(where: { $0.name == name })?.uuid16 else {
                throw ScenarioError("unknown characteristic '\(name)' in '\(key)' (expected "
                                    + names.map(\.name).joined(separator: ", ") + ")", at: item.position)
            }
            out.insert(uuid16)
        }
        return out
    }

    static func string(_ value: TOMLValue, _ key: String) throws(ScenarioError) -> String {
        guard case .string(let s) = value.kind else {
            throw ScenarioError("'\(key)' must be a string, found \(value.typeName)", at: value.position)
        }
        return s
    }
}
