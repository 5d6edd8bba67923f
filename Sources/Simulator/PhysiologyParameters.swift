/// The knobs of one simulated wearer; the scenario file's `[physiology]` table and `[[device]]` overrides.
public struct PhysiologyParameters: Hashable, Sendable {
    /// Mean heart rate, beats per minute (45…180).
    public var heartRate: Double = 70
    /// Relative heart-rate variability (respiratory and slow modulation of the interval).
    public var variability: Double = 0.04
    /// How many motion episodes an hour, on average.
    public var motionPerHour: Double = 20
    /// How many walking or running episodes an hour, on average (0: none, the default). Each lasts 1–5 min at a
    /// cadence of 1.5–3 Hz, walking or running alike likely; see ``MotionEpisode/Kind``.
    public var walksPerHour: Double = 0
    /// Tonic skin conductance, µS.
    public var edaTonic: Double = 4
    /// Skin-conductance responses a minute, on average.
    public var responsesPerMinute: Double = 2
    /// Skin temperature the wrist settles at, °C.
    public var temperature: Double = 33.5
    /// Battery at start, percent.
    public var batteryStart: Double = 95
    /// Battery drain, percent an hour.
    public var batteryDrainPerHour: Double = 10
    /// Button presses an hour, on average (0 disables them).
    public var tagsPerHour: Double = 6
    /// Episodes an hour, on average, in which a heart-rate strap loses skin contact (0 disables them).
    public var contactLossPerHour: Double = 4

    public init() {}

    /// The range a configured heart rate must lie in.
    public static let heartRateRange: ClosedRange<Double> = 45...180
}
