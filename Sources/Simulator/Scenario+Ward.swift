import Config

/// `[ward]`, `[[ward.board]]`, `[[ward.event]]` and `[[device]] route` (Docs/simulator.md, "Ward mode").
extension Scenario {
    /// Metres either side of the origin a board or waypoint may stand.
    static let wardExtent: ClosedRange<Double> = -100_000...100_000

    static func ward(_ table: TOMLTable, at position: SourcePosition) throws(ScenarioError) -> WardScenario {
        var ward = WardScenario()
        var events: [(TOMLTable, SourcePosition)] = []
        for entry in table.entries {
            let v = entry.value
            switch entry.key {
            case "tx_power_dbm": ward.pathLoss.txPower = try Self.number(v, entry.key, in: -127...20)
            case "path_loss_exponent": ward.pathLoss.exponent = try Self.number(v, entry.key, in: 1...6)
            case "noise_db": ward.pathLoss.noise = try Self.number(v, entry.key, in: 0...20)
            case "floor_dbm": ward.pathLoss.floor = try Self.number(v, entry.key, in: -127...20)
            case "link_floor_dbm": ward.pathLoss.linkFloor = try Self.number(v, entry.key, in: -127...20)
            case "board":
                for item in try Self.tables(v, "ward.board") {
                    let board = try Self.board(item, at: v.position)
                    guard ward.board(named: board.name) == nil else {
                        throw ScenarioError("two boards are called '\(board.name)'", at: v.position)
                    }
                    ward.boards.append(board)
                }
            case "event":
                for item in try Self.tables(v, "ward.event") { events.append((item, v.position)) }
            default:
                throw ScenarioError("unknown key 'ward.\(entry.key)' (expected tx_power_dbm, path_loss_exponent, "
                                    + "noise_db, floor_dbm, link_floor_dbm, board, event)", at: entry.keyPosition)
            }
        }
        guard !ward.boards.isEmpty else {
            throw ScenarioError("[ward] needs at least one [[ward.board]]", at: position)
        }
        guard ward.boards.count <= 64 else { throw ScenarioError("[ward] has at most 64 boards", at: position) }
        // Events name boards, which may be listed after them.
        for (item, itemPosition) in events {
            ward.events.append(try Self.wardEvent(item, at: itemPosition, ward: ward))
        }
        ward.events.sort { $0.at < $1.at }
        return ward
    }

    private static func board(_ table: TOMLTable, at position: SourcePosition) throws(ScenarioError) -> WardBoard {
        var name: String?
        var address: String?
        var x: Double?
        var y: Double?
        var adapters = 1
        for entry in table.entries {
            let v = entry.value
            switch entry.key {
            case "name":
                let text = try Self.string(v, entry.key)
                guard WardBoard.isValidName(text) else {
                    throw ScenarioError("a board's 'name' is 1 to 32 of A-Z a-z 0-9 _ -", at: v.position)
                }
                name = text
            case "bus":
                let text = try Self.string(v, entry.key)
                guard !text.isEmpty else { throw ScenarioError("'bus' must be a D-Bus address", at: v.position) }
                address = text
            case "x": x = try Self.number(v, entry.key, in: Self.wardExtent)
            case "y": y = try Self.number(v, entry.key, in: Self.wardExtent)
            case "adapters": adapters = Int(try Self.integer(v, entry.key, in: 1...Int64(SimulatedAdapter.maximum)))
            default:
                throw ScenarioError("unknown key '\(entry.key)' in [[ward.board]] (expected name, bus, x, y, "
                                    + "adapters)", at: entry.keyPosition)
            }
        }
        guard let name else { throw ScenarioError("[[ward.board]] needs a 'name'", at: position) }
        guard let x, let y else {
            throw ScenarioError("board '\(name)' needs its position 'x' and 'y' (metres)", at: position)
        }
        return WardBoard(name: name, address: address, x: x, y: y, adapters: adapters)
    }

    private static func wardEvent(_ table: TOMLTable, at position: SourcePosition, ward: WardScenario)
        throws(ScenarioError) -> WardEvent
    {
        var at: Double?
        var board: Int?
        var action: String?
        var seconds: Double?
        for entry in table.entries {
            let v = entry.value
            switch entry.key {
            case "at_s": at = try Self.number(v, entry.key, in: 0...1e9)
            case "board":
                let name = try Self.string(v, entry.key)
                guard let index = ward.board(named: name) else {
                    throw ScenarioError("no [[ward.board]] is called '\(name)'", at: v.position)
                }
                board = index
            case "action": action = try Self.string(v, entry.key)
            case "duration_s": seconds = try Self.number(v, entry.key, in: 0.001...1e9)
            default:
                throw ScenarioError("unknown key '\(entry.key)' in [[ward.event]] (expected at_s, board, action, "
                                    + "duration_s)", at: entry.keyPosition)
            }
        }
        guard let at, let board, let seconds else {
            throw ScenarioError("[[ward.event]] needs 'at_s', 'board' and 'duration_s'", at: position)
        }
        switch action {
        case "radio_off"?: return WardEvent(at: at, board: board, action: .radioOff(seconds: seconds))
        case "power_off"?: return WardEvent(at: at, board: board, action: .powerOff(seconds: seconds))
        default: throw ScenarioError("[[ward.event]] 'action' must be radio_off or power_off", at: position)
        }
    }

    /// `route = [[t, x, y], …]` or `[{ t = …, x = …, y = … }, …]`: 1 to 10 000 waypoints in non-decreasing time.
    static func route(_ value: TOMLValue) throws(ScenarioError) -> WardRoute {
        guard case .array(let items) = value.kind, (1...10_000).contains(items.count) else {
            throw ScenarioError("'route' must be an array of 1 to 10000 waypoints [t, x, y]", at: value.position)
        }
        var waypoints: [WardWaypoint] = []
        for item in items {
            let t: Double
            let x: Double
            let y: Double
            switch item.kind {
            case .array(let numbers) where numbers.count == 3:
                t = try Self.number(numbers[0], "route t", in: 0...1e9)
                x = try Self.number(numbers[1], "route x", in: Self.wardExtent)
                y = try Self.number(numbers[2], "route y", in: Self.wardExtent)
            case .table(let point):
                for entry in point.entries where !["t", "x", "y"].contains(entry.key) {
                    throw ScenarioError("unknown key '\(entry.key)' in a waypoint (expected t, x, y)",
                                        at: entry.keyPosition)
                }
                guard let tv = point["t"], let xv = point["x"], let yv = point["y"] else {
                    throw ScenarioError("a waypoint needs 't', 'x' and 'y'", at: item.position)
                }
                t = try Self.number(tv, "t", in: 0...1e9)
                x = try Self.number(xv, "x", in: Self.wardExtent)
                y = try Self.number(yv, "y", in: Self.wardExtent)
            default:
                throw ScenarioError("a waypoint is [t, x, y] (seconds, metres, metres) or { t, x, y }",
                                    at: item.position)
            }
            if let last = waypoints.last, t < last.t {
                throw ScenarioError("waypoints must be in time order (\(t) s after \(last.t) s)", at: item.position)
            }
            waypoints.append(WardWaypoint(t: t, x: x, y: y))
        }
        return WardRoute(waypoints)
    }
}
