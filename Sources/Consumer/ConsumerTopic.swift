/// What a topic under the prefix names (SPEC §10): `P/A/status`, `P/A/devices`, `P/A/metrics`, `P/A/S/status`,
/// `P/A/S/<stream>`. Everything else under `P/+/+/#` (commands, fleet topics) is not for consumers.
public enum ConsumerTopic: Equatable, Sendable {
    case agentStatus(board: String)
    case devices(board: String)
    case metrics(board: String)
    case deviceStatus(board: String, device: String)
    case stream(board: String, device: String, stream: ConsumerStream)

    /// Parses `topic` below `prefix` (which may itself contain `/`).
    ///
    /// - Returns: `nil` for topics outside the contract.
    public static func parse(_ topic: String, prefix: String) -> ConsumerTopic? {
        let head = prefix + "/"
        guard topic.hasPrefix(head) else { return nil }
        let levels = topic.dropFirst(head.count).split(separator: "/", omittingEmptySubsequences: false)
        guard let board = levels.first.map(String.init), !board.isEmpty, board != "fleet" else { return nil }
        switch levels.count {
        case 2:
            switch levels[1] {
            case "status": return .agentStatus(board: board)
            case "devices": return .devices(board: board)
            case "metrics": return .metrics(board: board)
            default: return nil
            }
        case 3:
            let device = String(levels[1])
            guard Self.isDeviceID(device) else { return nil }
            if levels[2] == "status" { return .deviceStatus(board: board, device: device) }
            guard let stream = ConsumerStream(rawValue: String(levels[2])) else { return nil }
            return .stream(board: board, device: device, stream: stream)
        default:
            return nil
        }
    }

    /// A device id as the agent names it: 1–32 of `[0-9A-Za-z_-]` (E4 serials are 6 lower-case hex digits).
    public static func isDeviceID(_ text: String) -> Bool { Self.isToken(text, maximumLength: 32) }

    /// 1…`maximumLength` bytes of `[0-9A-Za-z_-]`.
    public static func isToken(_ text: String, maximumLength: Int) -> Bool {
        guard (1...maximumLength).contains(text.utf8.count) else { return false }
        return text.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }
}
