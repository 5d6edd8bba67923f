/// Whether a ``BluetoothAddress`` is the device's public (IEEE-assigned) address or a random one (Core
/// Specification Vol 6, Part B, 1.3), as BlueZ reports it in `Device1.AddressType`.
public enum BluetoothAddressType: String, Sendable, Hashable, CaseIterable {
    case `public`
    case random

    /// Parses BlueZ's `"public"` / `"random"`; anything else returns `nil` (no trap).
    ///
    /// - Parameter string: The text to parse, exactly as BlueZ writes it (lower case).
    public init?(_ string: some StringProtocol) {
        if string.utf8.elementsEqual("public".utf8) {
            self = .public
        } else if string.utf8.elementsEqual("random".utf8) {
            self = .random
        } else {
            return nil
        }
    }
}

extension BluetoothAddress {
    /// The kind of random address, from its two most significant bits; only meaningful when the address is
    /// ``BluetoothAddressType/random``.
    public enum RandomKind: Sendable, Hashable {
        /// `11`: fixed for the device's power cycle (many wearables use one instead of a public address).
        case `static`
        /// `01`: resolvable private address, changes over time; resolving it needs the bond's IRK.
        case resolvablePrivate
        /// `00`: non-resolvable private address.
        case nonResolvablePrivate
        /// `10`: reserved by the specification.
        case reserved
    }

    /// The random-address kind the top two bits announce (see ``RandomKind``).
    public var randomKind: RandomKind {
        switch self[0] >> 6 {
        case 0b11: .static
        case 0b01: .resolvablePrivate
        case 0b00: .nonResolvablePrivate
        default: .reserved
        }
    }
}
