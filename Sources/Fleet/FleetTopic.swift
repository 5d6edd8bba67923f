/// The fleet's retained topics under the prefix `P` (SPEC §18): `P/fleet/board/<A>`, `P/fleet/seen/<S>/<A>`,
/// `P/fleet/lease/<S>`.
public enum FleetTopic: Hashable, Sendable {
    case board(String)
    case seen(serial: String, board: String)
    case lease(String)

    /// The topic's text under `prefix`.
    public func text(prefix: String) -> String {
        switch self {
        case .board(let board): "\(prefix)/fleet/board/\(board)"
        case .seen(let serial, let board): "\(prefix)/fleet/seen/\(serial)/\(board)"
        case .lease(let serial): "\(prefix)/fleet/lease/\(serial)"
        }
    }

    /// The subscription that covers every fleet topic under `prefix`.
    public static func subscription(prefix: String) -> String { "\(prefix)/fleet/#" }

    /// Parses a topic received under `prefix`.
    ///
    /// - Throws: ``FleetDecodeError/badTopic(_:)`` for another prefix, an unknown kind, a wrong number of segments
    ///   or a segment that is not an identifier.
    public static func parse(_ topic: String, prefix: String) throws(FleetDecodeError) -> FleetTopic {
        guard topic.utf8.count <= 512 else { throw .badTopic("longer than 512 bytes") }
        let head = prefix + "/fleet/"
        guard topic.hasPrefix(head) else { throw .badTopic("not under \(prefix)/fleet/") }
        let rest = topic.dropFirst(head.count)
        let segments = rest.split(separator: "/", omittingEmptySubsequences: false)
        guard let kind = segments.first else { throw .badTopic("no kind") }
        for segment in segments.dropFirst() where !FleetProtocol.isIdentifier(segment) {
            throw .badTopic("segment \"\(segment.prefix(32))\" is not an identifier")
        }
        switch (kind, segments.count) {
        case ("board", 2): return .board(String(segments[1]))
        case ("seen", 3): return .seen(serial: String(segments[1]), board: String(segments[2]))
        case ("lease", 2): return .lease(String(segments[1]))
        default: throw .badTopic("\"\(kind.prefix(16))\" with \(segments.count - 1) segments")
        }
    }
}
