import EventLoop

/// One `org.bluez.Adapter1` of a simulated board (`hci0` … `hci7`, `--adapters N`, SPEC §18): what bluetoothd keeps
/// per adapter — power, the per-client discovery sessions and their filters, the advertisement monitors. Each
/// adapter has its own view of every wristband (``SimulatedDevice`` objects below its path); the wristband's one
/// radio link is shared (``Simulator/heldElsewhere(_:)``).
///
/// Owned by the loop thread, as the simulator is.
final class SimulatedAdapter {
    /// 0-based: `hci0` is index 0.
    let index: Int
    let name: String
    let path: String
    /// `hci0` keeps the historical `00:E0:4C:53:49:4D`; `hciK` ends in `4D + K`, so every adapter's is distinct and
    /// stable.
    let address: String
    /// What this adapter measures relative to `hci0`: −2 dB per index (a second dongle a little further from the
    /// wristbands), so that the adapters' RSSI differ while following one radio model.
    let rssiOffset: Int

    var powered = true
    var filters: [String: DiscoveryFilter] = [:]
    var discoverySessions: [String] = []
    var discoveringSince: Double?
    /// When the simulated LE scan last (re)started, for bluetoothd's RSSI re-announcements.
    var scanRestartedAt = 0.0
    var discoveringTotal = 0.0
    var monitors: [AdvertisementMonitor] = []
    /// The end of a `power_off`/`PowerCycle` fault on this adapter.
    var powerTimer: TimerHandle?

    /// The most adapters a board may have (`--adapters`, a ward board's `adapters`).
    static let maximum = 8

    init(index: Int) {
        self.index = index
        self.name = "hci\(index)"
        self.path = "/org/bluez/hci\(index)"
        let last = UInt8(0x4D + index)
        self.address = "00:E0:4C:53:49:" + String(last, radix: 16, uppercase: true)
        self.rssiOffset = -2 * index
    }

    /// The adapter `hciN` names among `count` adapters (`""` is `hci0`), or `nil`.
    static func index(named name: String, count: Int) -> Int? {
        if name.isEmpty { return 0 }
        guard name.hasPrefix("hci"), let index = Int(name.dropFirst(3)), (0..<count).contains(index),
              name == "hci\(index)" else { return nil }
        return index
    }
}
