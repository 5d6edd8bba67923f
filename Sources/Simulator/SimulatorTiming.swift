/// Delays and timeouts of the simulated radio and bluetoothd (scenario table `[timing]`).
public struct SimulatorTiming: Hashable, Sendable {
    /// `Connect` to `Connected = true`, ms.
    public var connectMilliseconds = 400
    /// `Connected` to `ServicesResolved` (GATT discovery), ms.
    public var servicesMilliseconds = 150
    /// `Disconnect` to `Connected = false`, ms.
    public var disconnectMilliseconds = 100
    /// How long a `Connect` to an out-of-range device waits before failing, s.
    public var connectTimeoutSeconds = 5.0
    /// How long a disconnected, undiscovered device stays on the bus (bluetoothd's `TemporaryTimeout`), s.
    public var temporaryTimeoutSeconds = 30.0
    /// How long without advertisements before a monitor is told `DeviceLost`, s.
    public var monitorLostSeconds = 5.0
    /// The streaming tick, ms: packets are computed from sample clocks, so this sets latency, not rate.
    public var tickMilliseconds = 25

    public init() {}
}
