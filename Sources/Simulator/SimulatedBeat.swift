/// One heartbeat of the ground truth: the PPG pulse's foot (the fiducial Empatica's IBIs use) and its systolic
/// peak, in simulator seconds since start.
struct SimulatedBeat: Sendable {
    var foot: Double
    /// The interval to the next beat, s (it shapes this beat's diastolic run-off).
    var interval: Double
    /// The interval that ends at this beat, s: the one an IBI at this foot measures (E4 `IBI.csv` convention);
    /// `nil` for the very first beat.
    var precedingInterval: Double?
    /// The pulse's amplitude factor (beat-to-beat variation).
    var amplitude: Double

    /// Timing scale of the pulse shape: faster hearts have narrower pulses.
    var scale: Double { min(max(self.interval / 0.8, 0.45), 1.3) }

    /// The systolic peak: the centre of the systolic wave.
    var peak: Double { self.foot + 0.14 * self.scale }
}
