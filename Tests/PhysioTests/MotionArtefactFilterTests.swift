import Glibc
import Physio
import Testing

/// The artefact-reduced BVP (``MotionArtefactFilter``): motion energy out, clean pulses untouched.
@Suite struct MotionArtefactFilterTests {
    /// Power of `x[range]` at `hertz` (64 Hz samples), mean removed.
    func power(_ x: [Double], _ range: Range<Int>, at hertz: Double) -> Double {
        let slice = Array(x[range])
        let mean = slice.reduce(0, +) / Double(slice.count)
        var re = 0.0, im = 0.0
        for (index, value) in slice.enumerated() {
            let w = 2 * Double.pi * hertz * Double(index) / 64
            re += (value - mean) * cos(w)
            im += (value - mean) * sin(w)
        }
        return re * re + im * im
    }

    @Test func removesMotionEnergyAndKeepsThePulse() {
        let signal = MotionSignal(heartRate: { _ in 72 }, cadence: 1.9, swingG: 0.5, artefactRatio: 2.0)
        var engine = IBIEngine()
        let run = signal.run(&engine, duration: 90)
        let late = (64 * 40)..<(64 * 90)
        // The cadence at least 13 dB down, its second harmonic at least 6 dB (bench/ibi/filtered.py: 16–20 dB and
        // 4–16 dB on the walking/running sets).
        for (harmonic, factor) in [(1.0, 20.0), (2.0, 4.0)] {
            let before = self.power(run.raw, late, at: 1.9 * harmonic)
            let after = self.power(run.filtered, late, at: 1.9 * harmonic)
            #expect(after < before / factor, "harmonic \(harmonic): \(after) vs \(before)")
        }
        let pulseBefore = self.power(run.raw, late, at: 1.2)
        let pulseAfter = self.power(run.filtered, late, at: 1.2)
        #expect(pulseAfter > 0.7 * pulseBefore && pulseAfter < 1.3 * pulseBefore)
    }

    @Test func leavesBeatsAtRestWhereTheyWere() {
        // Walk, then rest: once the wrist is still, the filtered BVP is the raw one to a hair, so a beat detector
        // finds the same feet in both.
        let signal = MotionSignal(heartRate: { _ in 70 }, cadence: 1.8, swingG: 0.5, artefactRatio: 1.5)
        var engine = IBIEngine()
        var walked = signal
        walked.cadence = 1.8
        let run = walked.run(&engine, duration: 40)
        var rest = signal
        rest.cadence = nil
        let still = rest.run(&engine, duration: 60, from: 40)
        let settled = (64 * 5)..<still.raw.count
        var largest = 0.0
        for index in settled { largest = max(largest, abs(still.filtered[index] - still.raw[index])) }
        #expect(largest < 0.8)  // the pulse is ≈ 80 units: 1 %
        #expect(!run.filtered.isEmpty)
        var onRaw = IBIEngine(), onFiltered = IBIEngine()
        var rawFeet: [Double] = [], filteredFeet: [Double] = []
        for index in 0..<still.raw.count {
            let t = Double(index) / 64
            // From 5 s on: both detectors past their first pulses, the filter past the end of the walk.
            if let beat = onRaw.appendBVP(still.raw[index], at: t).beat, t > 5 { rawFeet.append(beat.time) }
            if let beat = onFiltered.appendBVP(still.filtered[index], at: t).beat, t > 5 {
                filteredFeet.append(beat.time)
            }
        }
        #expect(rawFeet.count > 40)
        #expect(rawFeet == filteredFeet)
    }
}
