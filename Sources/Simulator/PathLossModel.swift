#if canImport(Glibc)
import Glibc
#endif

/// The ward's radio: the log-distance path-loss model, `RSSI = tx_power − 10·n·log10(d) + noise`, with `d` in
/// metres (at least ``minimumDistance``), `tx_power` the RSSI at 1 m and zero-mean seeded noise.
///
/// A board hears a wristband's advertisements only when the RSSI with noise is at least ``floor``; an established
/// link survives down to ``linkFloor`` of the noise-free RSSI (a connection holds at levels where discovery has
/// become unreliable, and a link should not drop on one unlucky sample), below which the board loses it.
public struct PathLossModel: Hashable, Sendable {
    /// RSSI at 1 m, dBm (`tx_power_dbm`). −59 dBm is the usual calibration of a wrist-worn BLE tag.
    public var txPower = -59.0
    /// Path-loss exponent `n` (`path_loss_exponent`): 2 in free space, 2.5–3.5 through a ward's walls and people.
    public var exponent = 3.0
    /// Standard deviation of the noise, dB (`noise_db`; the noise is bounded at ±3.46 σ).
    public var noise = 3.0
    /// The weakest advertisement a board hears, dBm (`floor_dbm`).
    public var floor = -90.0
    /// The weakest noise-free RSSI an established link survives, dBm (`link_floor_dbm`).
    public var linkFloor = -96.0
    /// Distances below this count as this (the model has no meaning at 0), m.
    public static let minimumDistance = 0.1

    public init() {}

    /// The noise-free RSSI at `distance` metres, dBm.
    public func meanRSSI(distance: Double) -> Double {
        self.txPower - 10 * self.exponent * log10(max(distance, PathLossModel.minimumDistance))
    }

    /// The RSSI at `distance` metres with a standard-normal draw `gaussian`, as bluetoothd reports it (an integer,
    /// clamped to −127…20 dBm).
    public func rssi(distance: Double, gaussian: Double) -> Int16 {
        let value = self.meanRSSI(distance: distance) + self.noise * gaussian
        return Int16(min(max(value.rounded(), -127), 20))
    }

    /// Whether an advertisement at `rssi` is heard.
    public func hears(_ rssi: Int16) -> Bool { Double(rssi) >= self.floor }

    /// Whether a link at `distance` metres holds.
    public func linkHolds(distance: Double) -> Bool { self.meanRSSI(distance: distance) >= self.linkFloor }
}
