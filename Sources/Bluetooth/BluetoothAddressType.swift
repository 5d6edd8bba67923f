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
