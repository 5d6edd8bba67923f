/// Delays and timeouts of the simulated radio and bluetoothd (scenario table `[timing]`).
public struct SimulatorTiming: Hashable, Sendable {
    /// `Connect` to the link being up (`Connected` true and `Connect` answered), ms.
    public var connectMilliseconds = 400
    /// Link up to `ServicesResolved = true` (GATT discovery, after `Connect` returned), ms. bluetoothd 5.66 took
    /// 875 ms in the VM of issue #10.
    public var servicesMilliseconds = 900
    /// `Disconnect` to `ServicesResolved = false` (the notification fds hang up), ms.
    public var disconnectMilliseconds = 100
    /// After a client's `Disconnect`, `ServicesResolved = false` to `Connected = false`, ms (≈ 300 ms with
    /// bluetoothd 5.66: the ATT channel closes first, the kernel reports the link down later).
    public var linkDownMilliseconds = 300
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
