import Glibc
import Testing
import TestSupport

@testable import Physio

/// A wristband without skin contact, lying still: the PPG is sensor noise alone (``PulsePresence``).
@Suite struct PulsePresenceTests {
    let start = 1_700_000_000.0

    /// `seconds` of uniform noise (±1) with the accelerometer still, from `offset`; returns the emitted intervals,
    /// the heart-rate values and the beats withheld for want of a pulse.
    func noise(_ engine: inout IBIEngine, seed: UInt64, seconds: Int, from offset: Double = 0)
        -> (intervals: Int, heartRates: Int, noPulse: Int)
    {
        var random = SplitMix64(seed: seed)
        var intervals = 0, heartRates = 0, noPulse = 0
        for index in 0..<(seconds * 64) {
            let t = self.start + offset + Double(index) / 64
            if index % 2 == 0 { engine.appendACC(x: 8, y: -4, z: 62, at: t) }
            let output = engine.appendBVP(Double(random.next() % 2001) / 1000 - 1, at: t)
            if output.interval != nil { intervals += 1 }
            if output.heartRate != nil { heartRates += 1 }
            if output.beat?.suppression == .noPulse { noPulse += 1 }
        }
        return (intervals, heartRates, noPulse)
    }

    @Test func emitsNothingFromSensorNoiseWithoutSkinContact() {
        // Before the check, 300 s of such noise gave 123–160 intervals and up to 63 s of heart rate, at confidence 1
        // from the beats (bench/ibi/nocontact.py, seeds 1–8); here 120 s each, and every seed emitted intervals.
        for seed: UInt64 in 1...8 {
            var engine = IBIEngine()
            let run = self.noise(&engine, seed: seed, seconds: 120)
            #expect(run.intervals == 0, "seed \(seed): \(run.intervals) intervals")
            #expect(run.heartRates == 0, "seed \(seed): \(run.heartRates) heart-rate values")
            #expect(run.noPulse > 0, "seed \(seed): the upstrokes are withheld for want of a pulse")
        }
    }

    @Test func aWristbandPutOnAfterLyingStillEmitsWithinSeconds() {
        // 60 s on the table, then worn: a pulse at 72 bpm, clean. Its intervals come once 8 s of slope show it.
        var engine = IBIEngine()
        let off = self.noise(&engine, seed: 3, seconds: 60)
        #expect(off.intervals == 0)
        var first: Double?
        var emitted = 0
        var random = SplitMix64(seed: 3)
        for index in 0..<(60 * 64) {
            let t = 60 + Double(index) / 64
            let u = (72.0 / 60 * Double(index) / 64).truncatingRemainder(dividingBy: 1)
            let z = (u - 0.2) / 0.08
            let pulse: Double = 80 * (exp(-z * z) + 0.3 * (1 - u))
            if index % 2 == 0 { engine.appendACC(x: 8, y: -4, z: 62, at: self.start + t) }
            let output = engine.appendBVP(pulse + Double(random.next() % 2001) / 1000 - 1, at: self.start + t)
            if output.interval != nil {
                emitted += 1
                if first == nil { first = t }
            }
        }
        #expect((first ?? .infinity) <= 60 + 15, "first interval at \(String(describing: first))")
        #expect(emitted >= 50, "\(emitted) of about 70 intervals")
    }

    @Test func theCorrelationSeesAPulseTrainAndNotNoise() {
        var pulse = PulsePresence(rate: 64)
        var noise = PulsePresence(rate: 64)
        var random = SplitMix64(seed: 9)
        var previous = 0.0, previousNoise = 0.0
        for index in 0..<(10 * 64) {
            let u = (1.25 * Double(index) / 64).truncatingRemainder(dividingBy: 1)
            let z = (u - 0.2) / 0.08
            let value: Double = 80 * exp(-z * z)
            pulse.append(value - previous)
            previous = value
            let n = Double(random.next() % 2001) / 1000 - 1
            noise.append(n - previousNoise)
            previousNoise = n
        }
        #expect((pulse.correlation(period: 0.8) ?? 0) > 0.9)
        #expect((noise.correlation(period: 0.8) ?? 1) < PulsePresence.threshold)
        // Flat: nothing to judge.
        var flat = PulsePresence(rate: 64)
        for _ in 0..<(10 * 64) { flat.append(0) }
        #expect(flat.correlation(period: 0.8) == nil)
    }
}
