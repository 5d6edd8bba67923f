/// A Bluetooth UUID in the width it was given: 16-bit and 32-bit UUIDs are shorthand for 128-bit UUIDs on the
/// Bluetooth base UUID `0000xxxx-0000-1000-8000-00805f9b34fb`.
///
/// Equality and hashing are on the 128-bit expansion, so `.bit16(0x2A37)` equals the `.bit128` value BlueZ
/// reports as `"00002a37-0000-1000-8000-00805f9b34fb"`. Normalising at that one boundary lets the rest of the
/// code compare the profile's short constants against whatever BlueZ hands out, without allocating.
public enum BluetoothUUID: Sendable, CustomStringConvertible {
    /// A 16-bit UUID on the Bluetooth base UUID.
    case bit16(UInt16)
    /// A 32-bit UUID on the Bluetooth base UUID.
    case bit32(UInt32)
    /// A full 128-bit UUID, most significant byte first as written.
    case bit128(UInt128)

    /// `00000000-0000-1000-8000-00805f9b34fb`: the Bluetooth base UUID the short forms expand onto.
    public static let baseUUID: UInt128 = 0x0000_0000_0000_1000_8000_0080_5F9B_34FB

    /// The 128-bit value this UUID stands for.
    public var uuid128: UInt128 {
        switch self {
        case .bit16(let value): Self.baseUUID | UInt128(value) << 96
        case .bit32(let value): Self.baseUUID | UInt128(value) << 96
        case .bit128(let value): value
        }
    }

    /// The shortest form that names the same UUID: `.bit16` or `.bit32` when the value lies on the base UUID.
    public var shortest: BluetoothUUID {
        let value = self.uuid128
        let mask: UInt128 = (UInt128(1) << 96) - 1
        guard value & mask == Self.baseUUID else { return .bit128(value) }
        let head = UInt32(truncatingIfNeeded: value >> 96)
        if let short = UInt16(exactly: head) { return .bit16(short) }
        return .bit32(head)
    }

    /// The 16-bit short form, or `nil` when this UUID is not a 16-bit UUID on the base UUID.
    ///
    /// The capture format (SPEC §6.4) records characteristics by this form.
    public var uuid16: UInt16? {
        if case .bit16(let value) = self.shortest { return value }
        return nil
    }

    /// The shortest form in upper-case hex, as specifications write UUIDs: `"2A37"` for a 16-bit UUID, 8 digits for
    /// a 32-bit one, and the canonical 128-bit form (``description``) for any other.
    public var shortDescription: String {
        switch self.shortest {
        case .bit16(let value): Self.hex(UInt128(value), digits: 4)
        case .bit32(let value): Self.hex(UInt128(value), digits: 8)
        case .bit128: self.description
        }
    }

    private static func hex(_ value: UInt128, digits: Int) -> String {
        let table: [UInt8] = Array("0123456789ABCDEF".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(digits)
        for index in 0..<digits {
            text.append(table[Int(truncatingIfNeeded: (value >> UInt128(4 * (digits - 1 - index))) & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The canonical lower-case 128-bit form BlueZ uses, e.g. `"00002a37-0000-1000-8000-00805f9b34fb"`.
    public var description: String {
        let value = self.uuid128
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for index in 0..<32 {
            if index == 8 || index == 12 || index == 16 || index == 20 { text.append(UInt8(ascii: "-")) }
            let nibble = Int(truncatingIfNeeded: (value >> UInt128(124 - 4 * index)) & 0xF)
            text.append(digits[nibble])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

extension BluetoothUUID: Hashable {
    public static func == (lhs: BluetoothUUID, rhs: BluetoothUUID) -> Bool {
        lhs.uuid128 == rhs.uuid128
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.uuid128)
    }
}
