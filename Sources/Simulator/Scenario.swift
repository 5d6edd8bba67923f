/// A simulation script: timing, physiology (global and per device) and faults over time. Parsed from TOML by
/// ``parse(_:)``; the default value is a quiet run.
public struct Scenario: Hashable, Sendable {
    public var timing = SimulatorTiming()
    /// Where the simulated bluetoothd copies one of real bluetoothd's habits (table `[bluetoothd]`).
    public var bluetoothd = BluetoothdBehaviour()
    /// Physiology for every device, unless overridden.
    public var physiology = PhysiologyParameters()
    /// When set, each device draws its heart rate from this range (seeded); an explicit override wins.
    public var heartRateRange: ClosedRange<Double>? = 55...85
    /// Per-device physiology by 1-based device index.
    public var devices: [Int: PhysiologyParameters] = [:]
    /// Device kinds by 1-based index (`[[device]] kind = "hrs"`); unlisted devices are E4s.
    public var kinds: [Int: SimulatedDeviceKind] = [:]
    /// Devices whose override sets `heart_rate`; the others keep the rate drawn from ``heartRateRange``.
    public var explicitHeartRates: Set<Int> = []
    public var faults: [ScheduledFault] = []
    /// Wristbands whose bluetoothd breaks BlueZ's contract (`[[hostile]]`, Scenario+Hostile.swift).
    public var hostile: [HostileBehaviour] = []

    public init() {}
}
