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
