/// Constants of the wire protocol (SPEC §18, Docs/fleet.md).
public enum FleetProtocol {
    /// The version in every payload's `"v"`. Payloads are strict (unknown fields are drops), so a new field means
    /// a new version; boards of different versions do not share a ward.
    public static let version: UInt64 = 1
    /// The largest epoch accepted: far beyond any real count, and `+ 1` can never overflow.
    public static let maximumEpoch: UInt64 = 1 << 53
    /// Identifiers (board ids, wristband serials, adapter names) are 1-64 bytes of `[A-Za-z0-9._-]`: a topic
    /// segment can then never hold a wildcard, a separator or a control character.
    public static let maximumIdentifierBytes = 64

    /// Whether `text` is a valid identifier (see ``maximumIdentifierBytes``).
    public static func isIdentifier(_ text: Substring) -> Bool {
        guard !text.isEmpty, text.utf8.count <= Self.maximumIdentifierBytes else { return false }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                continue
            default:
                return false
            }
        }
        return true
    }

    public static func isIdentifier(_ text: String) -> Bool { Self.isIdentifier(text[...]) }
}
