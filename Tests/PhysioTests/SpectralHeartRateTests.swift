import Glibc
import Physio
import Testing
import TestSupport

/// Heart rate through motion (``SpectralHeartRate`` inside ``IBIEngine``): outcomes on signals with exact truth.
@Suite struct SpectralHeartRateTests {
    /// Spectral values in [from, to) seconds.
    func spectral(_ ticks: [MotionSignal.Tick], from: Double, to: Double = .infinity) -> [MotionSignal.Tick] {
        ticks.filter { $0.time >= from && $0.time < to && $0.sample?.source == .spectral }
    }

    func meanError(_ ticks: [MotionSignal.Tick]) -> Double {
        ticks.map { abs($0.sample!.beatsPerMinute - $0.truth) }.reduce(0, +) / Double(max(ticks.count, 1))
    }

    @Test func publishesNothingBeforeAWindowThenTracksWalking() {
        // Walking from the start: no clean beats, so every value is spectral, and none before 8 s of signal.
        let signal = MotionSignal(heartRate: { _ in 96 }, cadence: 1.7, swingG: 0.4, artefactRatio: 1.0)
        var engine = IBIEngine()
        let run = signal.run(&engine, duration: 90)
        #expect(run.ticks.allSatisfy { $0.time >= 8 })
        let late = self.spectral(run.ticks, from: 30)
        #expect(late.count >= 55)  // of 60 seconds
        #expect(self.meanError(late) < 3)
        #expect(late.allSatisfy { abs($0.sample!.beatsPerMinute - $0.truth) < 6 })
    }

    @Test func publishesNoConfidentValueWithoutAPulse() {
        // Off the wrist while the arm swings: the PPG carries the motion and sensor noise only.
        let signal = MotionSignal(heartRate: { _ in 80 }, cadence: 1.8, swingG: 0.4, artefactRatio: 1.0, pulse: false)
        var engine = IBIEngine()
        let run = signal.run(&engine, duration: 120)
        #expect(run.ticks.allSatisfy { ($0.sample?.confidence ?? 0) <= 0.3 })
        #expect(run.ticks.count <= 6)
        // Flat, and then garbage: nothing, and no trap.
        var flat = IBIEngine()
        let still = MotionSignal(heartRate: { _ in 80 }, pulse: false)
        let flatRun = still.run(&flat, duration: 60, bvp: { _ in 0 })
        #expect(flatRun.ticks.isEmpty)
        var garbage = IBIEngine()
        var random = SplitMix64(seed: 11)
        var hits = 0
        for index in 0..<(64 * 60) {
            // Sensor noise with NaN, infinities and absurd values at random places.
            let roll = random.next() % 100
            let noise = Double(random.next() % 1000) / 100
            let value: Double = roll < 5 ? .nan : (roll < 10 ? 1e300 : (roll < 12 ? -.infinity : noise))
            garbage.appendACC(x: roll < 30 ? .nan : 1e200, y: 0, z: 64, at: Double(index) / 64)
            if let rate = garbage.appendBVP(value, at: Double(index) / 64).heartRate, rate.confidence > 0.3 { hits += 1 }
        }
        #expect(hits == 0)
    }

    /// The estimator alone (no beats to seed it) on the simulator's pulse (Sources/Simulator/PhysiologyModel.swift:
    /// a systolic Gaussian of 0.05 s, a diastolic wave, a run-off to a sharp foot) at a steady `bpm`, wrist still.
    func estimates(bpm: Double, seconds: Int) -> [Double] {
        var estimator = SpectralHeartRate()
        var values: [Double] = []
        let interval = 60 / bpm
        for index in 0..<(seconds * 64) {
            let t = Double(index) / 64
            let tau = t.truncatingRemainder(dividingBy: interval)
            let systolic = exp(-((tau - 0.14) / 0.05) * ((tau - 0.14) / 0.05))
            let diastolic = 0.4 * exp(-((tau - 0.36) / 0.07) * ((tau - 0.36) / 0.07))
            let rise = min(max(tau / 0.12, 0), 1)
            let runoff = 0.35 * rise * rise * min(max(1 - tau / interval, 0), 1)
            estimator.appendBVP(80 * (systolic + diastolic + runoff + 0.15 * sin(2 * .pi * 0.2 * t)))
            if index % 2 == 0 { estimator.appendACC(x: 8, y: -4, z: 62) }
            if index % 64 == 63, let value = estimator.estimate() { values.append(value.beatsPerMinute) }
        }
        return values
    }

    @Test func startsOnTheFundamentalOfAPulseWithStrongHarmonics() {
        // A sharp systolic wave puts more power in the 2nd and 3rd harmonics, after the first difference, than in the
        // fundamental. Issue #18: at start-up the agent published 202 bpm against a true 67 (the 3rd harmonic).
        for bpm in [55.0, 67, 75, 150] {
            let values = self.estimates(bpm: bpm, seconds: 40)
            #expect(values.count >= 20, "\(bpm) bpm: \(values)")
            #expect(values.allSatisfy { abs($0 - bpm) < 3 }, "\(bpm) bpm: \(values)")
        }
    }

    @Test func followsAStepChangeInHeartRate() {
        // 85 → 120 bpm at 40 s while walking: the track must reach the new rate.
        let signal = MotionSignal(heartRate: { $0 < 40 ? 85 : 120 }, cadence: 1.6, swingG: 0.4, artefactRatio: 1.0)
        var engine = IBIEngine()
        let run = signal.run(&engine, duration: 100)
        let after = self.spectral(run.ticks, from: 65)
        #expect(after.count >= 30)
        #expect(self.meanError(after) < 3)
        let before = self.spectral(run.ticks, from: 20, to: 40)
        #expect(self.meanError(before) < 3)
    }

    @Test func holdsTheRateWhenTheCadenceMeetsIt() {
        // Running at 150 steps a minute with the heart at 148–152: the cadence sits on the pulse. Clean at rest first,
        // so the track starts from the beats.
        let signal = MotionSignal(heartRate: { 150 + 2 * sin($0 / 10) }, cadence: 2.5, swingStart: 40, swingG: 1.0,
                                  artefactRatio: 2.0)
        var engine = IBIEngine()
        let run = signal.run(&engine, duration: 130)
        #expect(run.ticks.contains { $0.time < 40 && $0.sample?.source == .beats })
        let motion = run.ticks.filter { $0.time >= 50 }
        #expect(motion.count >= 64)  // of 80 seconds
        #expect(self.meanError(motion) < 4)
    }

    @Test func startsOverOnReset() {
        var engine = IBIEngine()
        let fast = MotionSignal(heartRate: { _ in 150 }, cadence: 2.2, swingG: 0.5, artefactRatio: 1.0)
        _ = fast.run(&engine, duration: 60)
        engine.reset()
        let slow = MotionSignal(heartRate: { _ in 90 }, cadence: 1.6, swingG: 0.4, artefactRatio: 1.0, seed: 9)
        let run = slow.run(&engine, duration: 60, from: 60)
        #expect(run.ticks.allSatisfy { $0.time >= 68 })
        let values = self.spectral(run.ticks, from: 80)
        #expect(values.count >= 30)
        #expect(self.meanError(values) < 3)
    }
}
