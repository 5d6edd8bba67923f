/// One message received on a fleet topic, decoded. An empty retained payload deletes the topic's message.
public enum FleetMessage: Hashable, Sendable {
    case board(String, BoardPresence?)
    case seen(serial: String, board: String, Sighting?)
    case lease(String, Lease?)

    /// Decodes a message received under `prefix`; `nil` payloads in the result are deletions.
    ///
    /// - Throws: ``FleetDecodeError`` for a topic or payload that is not the fleet's; the caller counts a drop.
    public static func decode(topic: String, payload: [UInt8], prefix: String) throws(FleetDecodeError)
        -> FleetMessage
    {
        switch try FleetTopic.parse(topic, prefix: prefix) {
        case .board(let board):
            return .board(board, payload.isEmpty ? nil : try BoardPresence.decode(payload))
        case .seen(let serial, let board):
            return .seen(serial: serial, board: board, payload.isEmpty ? nil : try Sighting.decode(payload))
        case .lease(let serial):
            return .lease(serial, payload.isEmpty ? nil : try Lease.decode(payload))
        }
    }
}
