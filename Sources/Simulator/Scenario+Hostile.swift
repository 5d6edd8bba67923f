import Config

extension Scenario {
    /// One `[[hostile]]` table (Docs/simulator.md, "Hostile bluetoothd").
    ///
    /// - Throws: ``ScenarioError`` for an unknown key, a wrong type or a value out of range, with its position.
    static func hostile(_ table: TOMLTable) throws(ScenarioError) -> HostileBehaviour {
        var hostile = HostileBehaviour()
        for entry in table.entries {
            let v = entry.value
            switch entry.key {
            case "device": hostile.device = try Self.string(v, entry.key)
            case "wrong_types": hostile.wrongTypes = try Self.boolean(v, entry.key)
            case "malformed_signals":
                hostile.malformedSignalsPerSecond = Int(try Self.integer(v, entry.key, in: 0...10_000))
            case "acquire_notify_mtu":
                hostile.acquireNotifyMTU = try Self.integer(v, entry.key, in: Int64.min...Int64.max)
            case "notify_socket":
                let name = try Self.string(v, entry.key)
                guard let kind = HostileBehaviour.NotifySocket(rawValue: name) else {
                    throw ScenarioError("'notify_socket' must be one of "
                                        + HostileBehaviour.NotifySocket.allCases.map(\.rawValue)
                                            .joined(separator: ", "), at: v.position)
                }
                hostile.notifySocket = kind
            case "oversized_notifications":
                let bytes = Int(try Self.integer(v, entry.key, in: 0...65_000))
                guard bytes == 0 || bytes > 20 else {
                    throw ScenarioError("'oversized_notifications' must be 0 (off) or 21…65000 bytes", at: v.position)
                }
                hostile.oversizedNotifications = bytes
            case "properties_flood":
                hostile.propertiesFloodPerSecond = Int(try Self.integer(v, entry.key, in: 0...100_000))
            case "vanish_s":
                hostile.vanishSeconds = try Self.number(v, entry.key, in: 0...86_400)
                guard hostile.vanishSeconds == 0 || hostile.vanishSeconds >= 0.1 else {
                    throw ScenarioError("'vanish_s' must be 0 (off) or at least 0.1", at: v.position)
                }
            case "owner_change_mid_call":
                let name = try Self.string(v, entry.key)
                guard let call = HostileBehaviour.OwnerChangeCall(rawValue: name) else {
                    throw ScenarioError("'owner_change_mid_call' must be one of "
                                        + HostileBehaviour.OwnerChangeCall.allCases.map(\.rawValue)
                                            .joined(separator: ", "), at: v.position)
                }
                hostile.ownerChangeMidCall = call
            case "stale_reply":
                let name = try Self.string(v, entry.key)
                guard let reply = HostileBehaviour.StaleReply(rawValue: name) else {
                    throw ScenarioError("'stale_reply' must be one of "
                                        + HostileBehaviour.StaleReply.allCases.map(\.rawValue)
                                            .joined(separator: ", "), at: v.position)
                }
                hostile.staleReply = reply
            default:
                throw ScenarioError("unknown key '\(entry.key)' in [[hostile]]", at: entry.keyPosition)
            }
        }
        return hostile
    }
}
