/// A 6-byte Bluetooth device address (BD_ADDR), e.g. `00:07:80:9F:F1:67`.
///
/// Stored in one `UInt64` (byte 0, the first written, most significant) so it is a cheap, allocation-free
/// dictionary key on the event loop. Whether it is a public or a random address is not part of the six bytes:
/// see ``BluetoothAddressType``.
public struct BluetoothAddress: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The 48-bit address; the upper 16 bits are always zero.
    public let rawValue: UInt64

    /// An address from its 48-bit value; bits above 48 are discarded.
    public init(rawValue: UInt64) {
        self.rawValue = rawValue & 0xFFFF_FFFF_FFFF
    }

    /// An address from its six bytes in written order.
    public init(_ b0: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8, _ b4: UInt8, _ b5: UInt8) {
        let high = UInt64(b0) << 40 | UInt64(b1) << 32 | UInt64(b2) << 24
        self.rawValue = high | UInt64(b3) << 16 | UInt64(b4) << 8 | UInt64(b5)
    }

    /// Parses `XX:XX:XX:XX:XX:XX`, hex digits in either case; returns `nil` for anything else (no trap).
    ///
    /// - Parameter string: The text to parse, exactly 17 characters.
    public init?(_ string: some StringProtocol) {
        var value: UInt64 = 0
        var position = 0
        for byte in string.utf8 {
            defer { position += 1 }
            guard position < 17 else { return nil }
            if position % 3 == 2 {
                guard byte == UInt8(ascii: ":") else { return nil }
                continue
            }
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt64(nibble)
        }
        guard position == 17 else { return nil }
        self.rawValue = value
    }

    /// The byte at `index` (0…5) in written order; other indices read as 0.
    public subscript(index: Int) -> UInt8 {
        guard (0..<6).contains(index) else { return 0 }
        return UInt8(truncatingIfNeeded: self.rawValue >> UInt64(8 * (5 - index)))
    }

    /// The last three bytes as lower-case hex, e.g. `"9ff167"`: the device serial of SPEC §5 (for an E4 the
    /// serial printed on the wristband; for other devices the agent's name for them).
    public var serial: String {
        Self.hex(self.rawValue & 0xFF_FFFF, digits: 6, upperCase: false, colons: false)
    }

    /// Upper-case with colons, e.g. `"00:07:80:9F:F1:67"`, as BlueZ writes it.
    public var description: String {
        Self.hex(self.rawValue, digits: 12, upperCase: true, colons: true)
    }

    public static func < (lhs: BluetoothAddress, rhs: BluetoothAddress) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    private static func hex(_ value: UInt64, digits: Int, upperCase: Bool, colons: Bool) -> String {
        let table: [UInt8] = Array((upperCase ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
        var text: [UInt8] = []
        text.reserveCapacity(digits + digits / 2)
        for index in 0..<digits {
            if colons && index > 0 && index % 2 == 0 { text.append(UInt8(ascii: ":")) }
            let nibble = Int(truncatingIfNeeded: (value >> UInt64(4 * (digits - 1 - index))) & 0xF)
            text.append(table[nibble])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
