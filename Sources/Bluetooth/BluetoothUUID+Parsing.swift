extension BluetoothUUID {
    /// Parses a UUID string, case-insensitively, without trapping on any input.
    ///
    /// Accepted forms: 4 hex digits (`"2A37"` → ``bit16(_:)``), 8 hex digits (``bit32(_:)``), 32 hex digits, or
    /// the canonical 36-character form with dashes after digits 8, 12, 16 and 20, as BlueZ writes it
    /// (both → ``bit128(_:)``; equality still matches the short forms). Anything else returns `nil`.
    ///
    /// - Parameter string: The text to parse.
    public init?(_ string: some StringProtocol) {
        let utf8 = string.utf8
        switch utf8.count {
        case 4:
            guard let value = Self.parseHex(utf8, dashes: false) else { return nil }
            self = .bit16(UInt16(truncatingIfNeeded: value))
        case 8:
            guard let value = Self.parseHex(utf8, dashes: false) else { return nil }
            self = .bit32(UInt32(truncatingIfNeeded: value))
        case 32:
            guard let value = Self.parseHex(utf8, dashes: false) else { return nil }
            self = .bit128(value)
        case 36:
            guard let value = Self.parseHex(utf8, dashes: true) else { return nil }
            self = .bit128(value)
        default:
            return nil
        }
    }

    /// Hex digits into a `UInt128`; with `dashes`, a `-` is required at positions 8, 13, 18 and 23 and nowhere
    /// else. At most 32 digits reach here, so the shifts cannot overflow.
    private static func parseHex(_ utf8: some Collection<UInt8>, dashes: Bool) -> UInt128? {
        var value: UInt128 = 0
        var position = 0
        for byte in utf8 {
            defer { position += 1 }
            let dashHere = dashes && (position == 8 || position == 13 || position == 18 || position == 23)
            if dashHere {
                guard byte == UInt8(ascii: "-") else { return nil }
                continue
            }
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt128(nibble)
        }
        return value
    }
}
