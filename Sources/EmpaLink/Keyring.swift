import Config

/// The offline keyring that authenticates API keys (SPEC §7): SHA-256 hashes of keys, each with the devices it
/// unlocks and an optional expiry date.
///
/// ```toml
/// [[key]]
/// sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
/// devices = ["9ff167", "a00102"]   # or ["*"]
/// expires = "2027-12-31"           # optional, UTC, last valid day
/// ```
///
/// Keys are never stored, only their hashes; a presented key is hashed and compared with every entry in constant
/// time, so neither timing nor an early exit tells which entry was close.
public struct Keyring: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        /// 32 bytes.
        public var digest: [UInt8]
        /// Serials (lower-case), or `nil` for every device (`"*"`).
        public var devices: Set<String>?
        /// Last valid day, as (year, month, day) in UTC.
        public var expires: CalendarDay?
    }

    public var entries: [Entry]

    public init(entries: [Entry]) {
        self.entries = entries
    }

    /// What a successful authentication grants.
    public struct Grant: Sendable, Equatable {
        /// Serials the key unlocks, or `nil` for all.
        public var devices: Set<String>?

        public func allows(serial: String) -> Bool {
            self.devices.map { $0.contains(serial.lowercased()) } ?? true
        }
    }

    /// Why a key was refused, in words an operator can act on.
    public enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        case unknownKey
        case expired(CalendarDay)

        public var description: String {
            switch self {
            case .unknownKey: return "the API key is not in the keyring"
            case .expired(let day): return "the API key expired on \(day)"
            }
        }
    }

    /// Checks `apiKey` on `today`.
    ///
    /// Every entry is compared, whatever matched earlier, so the time taken does not depend on where (or whether)
    /// the key is found.
    public func authenticate(apiKey: String, today: CalendarDay) -> Result<Grant, Refusal> {
        let digest = SHA256.hash(Array(apiKey.utf8))
        var found: Entry?
        for entry in self.entries {
            let equal = SHA256.constantTimeEqual(entry.digest, digest)
            if equal && found == nil { found = entry }
        }
        guard let entry = found else { return .failure(.unknownKey) }
        if let expires = entry.expires, today > expires {
            return .failure(.expired(expires))
        }
        return .success(Grant(devices: entry.devices))
    }

    /// SHA-256 of `bytes` (``SHA256``, in Swift: no libcrypto in the daemon for one hash at start-up).
    ///
    /// - Returns: the 32-byte digest; never `nil` (the optional remains from the libcrypto version, whose
    ///   callers check it).
    public static func sha256(_ bytes: [UInt8]) -> [UInt8]? {
        SHA256.hash(bytes)
    }

    /// Lower-case hex of `bytes`.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
