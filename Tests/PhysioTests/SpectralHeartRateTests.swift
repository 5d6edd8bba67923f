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

    @Test func publishesNothingConfidentOffTheWristWhileTheArmSwingsAtAnyCadence() {
        // Off the wrist, walking or running: the PPG is the arm swing's artefact alone, perfectly periodic. Shaped
        // one way (the harmonics' phases) it passes every single-pulse check, the template learns it in mild motion,
        // and four in a row confirm it: the beats used to be emitted and published at confidence 1, and seeded the
        // spectral track (bench/ibi/walk.py offwrist-walk, 5 of seeds 1–8). A beat rate on the accelerometer's
        // cadence (or its harmonic) while the wrist moves is not evidence of a pulse.
        let phases = [(1.1, 2.0, 0.4), (0.45, 0.5, 5.71), (1.65, 4.07, 1.12), (4.21, 0.92, 4.86), (0.44, 1.59, 5.98)]
        for (cadence, swing, ratio) in [(1.5, 0.35, 1.0), (1.8, 0.35, 0.85), (2.2, 0.5, 1.2), (2.7, 1.0, 2.0)] {
            for phase in phases {
                let signal = MotionSignal(heartRate: { _ in 80 }, cadence: cadence, swingStart: 20, swingG: swing,
                                          artefactRatio: ratio, wobble: 0.3, pulse: false, artefactPhases: phase)
                var engine = IBIEngine()
                let run = signal.run(&engine, duration: 90)
                let confident = run.ticks.filter { ($0.sample?.confidence ?? 0) > 0.3 }
                let first = confident.first.map { "\($0.sample!.beatsPerMinute) bpm from \($0.sample!.source)" } ?? ""
                #expect(confident.count == 0, "cadence \(cadence) Hz, phases \(phase): \(confident.count) s, \(first)")
            }
        }
    }

    @Test(arguments: [UInt64(1), 20, 35])
    func publishesNothingConfidentOffTheWristFromTheNoiseBesideTheArmSwing(seed: UInt64) {
        // Off the wrist as above, the artefact's harmonics in random phases, with the broadband wobble the ACC does
        // not explain. The estimator's first difference tilts the wobble's power toward the top of the band, so a
        // noise peak at 175–200 bpm can hold for the 12 s persistence rule (seeds 1 and 35), and a track acquired
        // from the noise in the 20 s at rest carried into the motion (seed 20). Of seeds 1–40 × the four cadences,
        // 12 of 160 recordings published values above 0.3 (up to 0.80) before probation and the track dropped at
        // rest without a pulse, 2 after (Docs/ibi.md, round 17); these three seeds failed at one cadence or more.
        for (cadence, swing, ratio) in [(1.5, 0.35, 1.0), (1.8, 0.35, 0.85), (2.2, 0.5, 1.2), (2.7, 1.0, 2.0)] {
            var random = SplitMix64(seed: seed &* 7919)
            let draw = { Double(random.next() % 6283) / 1000 }
            let phases = (draw(), draw(), draw())
            let signal = MotionSignal(heartRate: { _ in 80 }, cadence: cadence, swingStart: 20, swingG: swing,
                                      artefactRatio: ratio, wobble: 0.3, pulse: false, artefactPhases: phases,
                                      seed: seed)
            var engine = IBIEngine()
            let run = signal.run(&engine, duration: 90)
            let confident = run.ticks.compactMap { tick in
                tick.sample.flatMap { $0.confidence > 0.3 ? (Int(tick.time), $0.beatsPerMinute, $0.confidence) : nil }
            }
            #expect(confident.isEmpty, "cadence \(cadence) Hz, phases \(phases): \(confident.prefix(5))")
        }
    }

    @Test func aTrackSeededOnTheCadenceIsNotConfirmedByTheMotion() {
        // The estimator alone, seeded for 30 s with the cadence (as if the arm swing's artefact had passed for beats),
        // then left to its own spectrum: no pulse, the artefact (cadence and two harmonics, 1.2 × a pulse) and 30 %
        // broadband wobble the ACC does not explain. A beat-seeded track must be confirmed by a peak of its own
        // outside the motion mask before it publishes above the lowest confidences (≤ 0.3).
        for cadence in [96.0, 110, 132, 156] {
            var estimator = SpectralHeartRate()
            var random = SplitMix64(seed: UInt64(cadence))
            var wander = 0.0
            var confident: [(Int, Double, Double)] = []
            for index in 0..<(90 * 64) {
                let t = Double(index) / 64
                let phase = 2 * Double.pi * cadence / 60 * t
                wander += 0.54 * (Double(random.next() % 1000) / 1000 - 0.5 - wander)
                estimator.appendBVP(96 * (sin(phase + 1.65) + 0.5 * sin(2 * phase + 4.07) + 0.25 * sin(3 * phase + 1.12)
                    + 0.3 * wander / 0.17))
                if index % 2 == 0 {
                    estimator.appendACC(x: (8 + 25 * (sin(phase) + 0.3 * sin(2 * phase))).rounded(),
                                        y: (-4 + 12 * sin(phase + 0.7)).rounded(), z: (62 + 10 * sin(2 * phase)).rounded())
                }
                if index % 64 == 63 {
                    if index < 64 * 30 {
                        estimator.seed(beatsPerMinute: cadence + 1)
                    } else if let value = estimator.estimate(), value.confidence > 0.3 {
                        confident.append((index / 64, value.beatsPerMinute, value.confidence))
                    }
                }
            }
            #expect(confident.isEmpty, "cadence \(cadence): \(confident.prefix(5))")
        }
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
    @Test func keepsTrackingWhileTheHeartRateCrossesTheCadence() {
        // Running at 156 steps a minute (2.6 Hz) while the heart climbs 120 → 170 bpm through it: within the
        // cadence's main lobe (±15 bpm of an 8 s window) the pulse cannot be resolved, and the track used to be
        // dropped there. It must be published ≥ 90 % of the motion time, within 5 bpm on average.
        let rate: (Double) -> Double = { $0 < 40 ? 120 : 145 - 25 * exp(-($0 - 40) / 30) }
        let signal = MotionSignal(heartRate: rate, cadence: 2.6, swingStart: 40, swingG: 1.0, artefactRatio: 2.5,
                                  wobble: 0.3)
        var engine = IBIEngine()
        let run = signal.run(&engine, duration: 200)
        let crossing = run.ticks.filter { $0.time >= 50 && $0.time < 200 && $0.sample != nil }
        #expect(crossing.count >= 135)  // of 150 seconds
        #expect(self.meanError(crossing) < 5)
        let near = crossing.filter { abs($0.truth - 156) <= 19 }
        #expect(near.count >= 85)  // truth within 19 bpm of the cadence: 95 s
    }

    @Test func followsAPulseBesideTheCadenceAsAPeakOfItsOwn() {
        // Clean at rest, then running at 150 steps a minute with the heart at 159–161 and an artefact 3 × the pulse:
        // 10 bpm above the cadence, beside its ±4 bpm mask, which hides the lower part of the pulse's lobe. Counted
        // without that part the pulse's concentration fell below the tracking bar in a quarter of the seconds
        // (seeds 7, 3, 5: 84, 69 and 79 of 105 seconds above the lowest confidence, 232 in all), which only
        // coasting and weak peaks bridged, for 10 s at most (bench/ibi/walk.py run-cadence-hr lost its track this
        // way). Counted as the share a pulse there would show: 98, 86, 86 (270). Values in all: 102 each; since
        // round 26 (a hold the 16 s window does not bear out is not published) seed 5 gives 97, five right holds the
        // long window did not show — the cost of that rule where the heart stays put beside the cadence.
        var followed = 0
        for seed: UInt64 in [7, 3, 5] {
            let signal = MotionSignal(heartRate: { 160 + sin($0 / 10) }, cadence: 2.5, swingStart: 30, swingG: 1.0,
                                      artefactRatio: 3.0, wobble: 0.3, seed: seed)
            var engine = IBIEngine()
            let values = signal.run(&engine, duration: 150).ticks.filter { $0.time >= 45 && $0.sample != nil }
            #expect(values.count >= 95, "seed \(seed): \(values.count) values of 105")
            #expect(self.meanError(values) < 2, "seed \(seed)")
            followed += values.filter { $0.sample!.confidence > SpectralHeartRate.publishedConfidence }.count
        }
        #expect(followed >= 255, "\(followed) of 315 seconds above the lowest confidence")
        // Without the pulse the same run publishes nothing above the merged-peak confidence.
        let off = MotionSignal(heartRate: { 160 + sin($0 / 10) }, cadence: 2.5, swingStart: 30, swingG: 1.0,
                               artefactRatio: 3.0, wobble: 0.3, pulse: false)
        var offEngine = IBIEngine()
        #expect(off.run(&offEngine, duration: 150).ticks.allSatisfy { ($0.sample?.confidence ?? 0) <= 0.3 })
    }

    /// The estimator alone, seeded on a pulse at `pulse` bpm (amplitude 80, or none), the wrist swinging once a
    /// stride at `swing` /min: ACC x and the PPG's artefact (`artefact` in amplitude) both hold the swing and 0.8 × its
    /// 2nd harmonic, the step; white noise of `noise` × 80. Every value from 15 to 40 s (0 for none).
    func strideConfidences(pulse: Double, swing: Double, artefact: Double, noise: Double,
                           amplitude: Double = 80) -> [Double] {
        var estimator = SpectralHeartRate()
        var random = SplitMix64(seed: 5)
        var confidences: [Double] = []
        for index in 0..<(40 * 64) {
            let t = Double(index) / 64
            let s = 2 * .pi * swing / 60 * t
            let white = noise * 80 * (Double(random.next() % 1000) / 500 - 1)
            let motion = sin(s + 1.1) + 0.8 * sin(2 * s + 2.0)
            estimator.appendBVP(amplitude * sin(2 * .pi * pulse / 60 * t) + artefact * motion + white)
            if index % 2 == 0 { estimator.appendACC(x: (8 + 64 * (sin(s) + 0.8 * sin(2 * s))).rounded(), y: -4, z: 62) }
            if index % 64 == 63 {
                if index < 64 * 9 { estimator.seed(beatsPerMinute: pulse) }
                let value = estimator.estimate()
                if index / 64 >= 15 { confidences.append(value?.confidence ?? 0) }
            }
        }
        return confidences
    }

    @Test func followsAPulseBesideTheStepAsAPeakOfItsOwn() {
        // An arm that swings once a stride (87 /min) puts the step (174 /min) into ACC as a peak of its own, which is
        // also the swing's 2nd harmonic. A running heart at 162–166 sits beside it, its lobe partly under the step's
        // ±4 bpm mask. The accelerometer shows the step itself, so the lobe is made up for as beside any cadence.
        // Refused because a harmonic lay there too: mean confidence 0.481 / 0.485 / 0.486 at the three noise levels,
        // and bench/ibi/walk.py stride-run-95 lost its track for minutes. Made up for: 0.523 / 0.526 / 0.539.
        var means: [Double] = []
        for noise in [0.5, 1.0, 2.0] {
            var sum = 0.0
            for pulse in [162.0, 163.0, 164.0, 165.0, 166.0] {
                let values = self.strideConfidences(pulse: pulse, swing: 87, artefact: 120, noise: noise)
                sum += values.reduce(0, +) / Double(values.count)
            }
            means.append(sum / 5)
            // Without the pulse nothing comes out above a hold of the seeded value.
            let off = self.strideConfidences(pulse: 164, swing: 87, artefact: 120, noise: noise, amplitude: 0)
            #expect(off.allSatisfy { $0 <= SpectralHeartRate.publishedConfidence }, "noise \(noise)")
        }
        #expect(means.allSatisfy { $0 >= 0.505 }, "\(means)")
    }

    @Test func acquiresAPulseBesideTheCadence() {
        // Running at 150 steps a minute from the start, no clean beats, so no track: the heart at 154–156, 5 bpm from
        // the cadence, its lobe half under the cadence's ±4 bpm mask. Counted without that half, its concentration
        // passed the tracking bar too rarely to be acquired: seeds 7, 3, 5, 11, 13 published 114 values in all, none
        // before 82 s, and one seed's mean error was over 2 bpm. With the lobe made up for while the track is lost
        // (the 4 s fast rule still judging the uncorrected concentration): 284, three seeds from 30–36 s, one from
        // 78 s; seed 11 publishes nothing either way.
        var published = 0, early = 0
        for seed: UInt64 in [7, 3, 5, 11, 13] {
            let signal = MotionSignal(heartRate: { 155 + sin($0 / 10) }, cadence: 2.5, swingG: 1.0, artefactRatio: 3.0,
                                      wobble: 0.3, seed: seed)
            var engine = IBIEngine()
            let values = signal.run(&engine, duration: 120).ticks.filter { $0.sample != nil }
            #expect(values.isEmpty || self.meanError(values) < 2, "seed \(seed)")
            published += values.count
            if let first = values.first, first.time < 60 { early += 1 }
            // Without the pulse nothing at all.
            let off = MotionSignal(heartRate: { 155 + sin($0 / 10) }, cadence: 2.5, swingG: 1.0, artefactRatio: 3.0,
                                   wobble: 0.3, pulse: false, seed: seed)
            var offEngine = IBIEngine()
            #expect(off.run(&offEngine, duration: 120).ticks.allSatisfy { $0.sample == nil }, "seed \(seed)")
        }
        #expect(published >= 250, "\(published) values")
        #expect(early >= 3, "\(early) of 5 acquired before 60 s")
    }

    @Test func publishesNothingConfidentAfterThePulseVanishesMidRun() {
        // Running with the heart near the cadence (coasting is allowed there), then the wristband slips off: the
        // accelerometer still swings, the PPG shows only the motion. Once the window holds no pulse nothing above
        // the merged-peak confidence (0.3) comes out, and nothing above 0.2 once 30 s have passed since the 16 s
        // window last held the pulse (round 24: the merged cadence peak becomes a hold).
        let running = MotionSignal(heartRate: { _ in 148 }, cadence: 2.6, swingStart: 20, swingG: 1.0,
                                   artefactRatio: 2.0)
        var engine = IBIEngine()
        _ = running.run(&engine, duration: 90)
        let off = MotionSignal(heartRate: { _ in 148 }, cadence: 2.6, swingG: 1.0, artefactRatio: 2.0, pulse: false,
                               seed: 8)
        let run = off.run(&engine, duration: 60, from: 90)
        let after = run.ticks.filter { $0.time >= 90 + 8 && $0.sample != nil }
        #expect(after.allSatisfy { $0.sample!.confidence <= 0.3 })
        #expect(after.filter { $0.time >= 90 + 16 + 30 + 2 }.allSatisfy { $0.sample!.confidence <= 0.2 })
    }
    @Test func residueAfterTheWristbandSlipsOffIsRarelyPublishedAboveTheLowestConfidence() {
        // Running with the heart away from the cadence and the broadband wobble the accelerometer does not explain
        // (bench/ibi/walk.py's 0.3), then the wristband slips off: the PPG shows the motion and the wobble only. The
        // 8 s window's track can live on a lump of the residue, at up to 0.5 and more. Round 25: a value whose peak
        // the last 16 s do not bear out is published at the lowest confidence. Once the long window holds no pulse
        // (16 s and the 3 s a value's time lags its tick), over seeds 1–8 at three rates and cadences, values above
        // 0.2 came out in 102 seconds before it, 14 after. While the pulse is there, it costs little.
        var residue: [(UInt64, Double, Int, Double, Double)] = []
        var onWrist = 0, onWristConfident = 0
        for seed in UInt64(1)...8 {
            for (heart, cadence) in [(120.0, 2.6), (100.0, 2.2), (150.0, 1.5)] {
                let running = MotionSignal(heartRate: { _ in heart }, cadence: cadence, swingStart: 20, swingG: 1.0,
                                           artefactRatio: 2.0, wobble: 0.3, seed: seed)
                var engine = IBIEngine()
                let on = running.run(&engine, duration: 90).ticks.filter { $0.time >= 40 && $0.sample != nil }
                onWrist += on.count
                onWristConfident += on.filter { $0.sample!.confidence > 0.2 }.count
                let off = MotionSignal(heartRate: { _ in heart }, cadence: cadence, swingG: 1.0, artefactRatio: 2.0,
                                       wobble: 0.3, pulse: false, seed: seed &+ 100)
                for tick in off.run(&engine, duration: 60, from: 90).ticks where tick.time >= 90 + 16 + 2 {
                    if let sample = tick.sample, sample.confidence > 0.2 {
                        residue.append((seed, heart, Int(tick.time), sample.beatsPerMinute, sample.confidence))
                    }
                }
            }
        }
        #expect(residue.count <= 30, "\(residue.count) s: \(residue.prefix(6))")
        #expect(onWristConfident * 10 >= onWrist * 9, "\(onWristConfident) of \(onWrist) values above 0.2 on the wrist")
    }

    /// The estimator alone, seeded on the pulse at `pulse` bpm, then `seconds` of running at `cadence` bpm: the PPG
    /// carries the pulse (if any) and an artefact 3 × its amplitude at the cadence, which the ACC shows too.
    func coastingValues(pulse: Double?, cadence: Double, seconds: Int, pulseUntil: Double = .infinity,
                        then laterPulse: Double? = nil) -> [(second: Int, bpm: Double, confidence: Double)] {
        var estimator = SpectralHeartRate()
        var values: [(second: Int, bpm: Double, confidence: Double)] = []
        for index in 0..<(seconds * 64) {
            let t = Double(index) / 64
            let rate = t < pulseUntil ? pulse : laterPulse
            let beat = rate.map { 80 * sin(2 * .pi * $0 / 60 * t) } ?? 0
            estimator.appendBVP(beat + 240 * sin(2 * .pi * cadence / 60 * t + 1.1))
            if index % 2 == 0 {
                estimator.appendACC(x: (8 + 64 * sin(2 * .pi * cadence / 60 * t)).rounded(), y: -4, z: 62)
            }
            if index % 64 == 63 {
                if let pulse, index < 64 * 9 { estimator.seed(beatsPerMinute: pulse) }  // clean beats until 9 s
                if let value = estimator.estimate() { values.append((index / 64, value.beatsPerMinute, value.confidence)) }
            }
        }
        return values
    }

    @Test func coastsThroughTheCadencesLobeForTheTracksLifeAtTheLowestConfidence() {
        // The heart at 146 bpm, 10 bpm below a 156 /min cadence: inside the 8 s window's main lobe, no peak of its own
        // there (the merged peak is farther than 8 bpm from the track). The wristband comes off at 9 s. The track's
        // value is held at the lowest confidence, or found in the 16 s window while it still holds the pulse, and
        // nothing is published after the track's life (10 s) past the long window's memory of the pulse (16 s).
        let values = self.coastingValues(pulse: 146, cadence: 156, seconds: 60, pulseUntil: 9)
        let after = values.filter { $0.second >= 10 }
        #expect(after.count >= 7)
        #expect(after.allSatisfy { abs($0.bpm - 146) <= 3 && $0.confidence <= 0.3 })
        #expect(after.allSatisfy { $0.second <= 9 + 16 + 10 + 2 })
        // Far from the cadence there is nothing to coast through: a dropped track publishes nothing.
        let far = self.coastingValues(pulse: nil, cadence: 100, seconds: 40).filter { $0.second >= 10 }
        #expect(far.isEmpty)
    }

    @Test func stopsHoldingAValueTheLongerWindowNoLongerBearsOut() {
        // The heart at 146 bpm, 10 bpm below a 156 /min cadence; at 9 s it climbs onto the cadence itself, where no
        // window can tell it from the motion. The old value is followed or held while the last 16 s still show it as
        // a peak of its own; once they do not, the hold is contradicted and is not published. Round 26: on the e4m
        // sets such holds were more than 5 bpm off in 56–78 % of the seconds. Before it, 143–146 was held at 0.2
        // until the track was lost: 19 values 10 bpm off, the last at 27 s; now 9, the last at 17 s.
        let values = self.coastingValues(pulse: 146, cadence: 156, seconds: 60, pulseUntil: 9, then: 156)
        let stale = values.filter { $0.second >= 9 && abs($0.bpm - 156) > 5 }
        #expect(stale.count <= 12, "\(stale)")
        #expect(stale.allSatisfy { $0.second < 9 + 16 }, "\(stale)")
    }

    @Test func followsAPulseInsideTheCadencesLobeInTheLongerWindow() {
        // The heart at 146 bpm stays 10 bpm below a 156 /min cadence with an artefact 3 × the pulse. The 8 s window
        // cannot resolve them; the 16 s window (main lobe ±7.5 bpm) can, so the track lives on at 146 (at the merged
        // peak's confidence, 0.3) instead of coasting for 10 s and falling silent (round 24, Docs/ibi.md).
        let values = self.coastingValues(pulse: 146, cadence: 156, seconds: 60).filter { $0.second >= 20 }
        #expect(values.count >= 35)  // of 40 seconds
        #expect(values.allSatisfy { abs($0.bpm - 146) <= 2 && $0.confidence <= 0.3 })
    }

    @Test func theMergedCadencePeakBecomesAHoldAfterThirtySeconds() {
        // The heart at 102 bpm, 6 bpm below a 108 /min cadence: the merged cadence peak carries the track. The
        // wristband comes off at 9 s and the arm swings on: the cadence is all the PPG shows, and nothing in it can
        // say whether a pulse is still there. It is published at 0.3 for 30 s after the last value from a peak of its
        // own (the beats' seed until 8 s), then at the lowest confidence, a hold that `--hr-confidence-above 0.2`
        // drops; before round 24, at 0.3 for as long as the arm swung.
        let values = self.coastingValues(pulse: 102, cadence: 108, seconds: 90, pulseUntil: 9)
        #expect(values.filter { $0.second >= 10 }.count >= 70)
        #expect(values.filter { $0.second <= 8 + 30 }.allSatisfy { $0.confidence <= 0.3 })
        #expect(values.filter { $0.second > 8 + 30 }.allSatisfy { $0.confidence <= 0.2 })
    }
}

/// Issue 18 round 9: what the spectral track publishes while the heart rate moves.
@Suite struct SpectralHeartRateLagTests {
    /// Walking (96 /min) with the heart at 110 bpm, rising 2 bpm/s from 30 s to 160 bpm at 55 s: every value
    /// spectral. Mean signed error of the values in 38–55 s against the rate at the window's centre (4 s before).
    func risingLag() -> (lag: Double, count: Int) {
        let rate: (Double) -> Double = { 110 + 2 * min(max($0 - 30, 0), 25) }
        let signal = MotionSignal(heartRate: rate, cadence: 1.6, swingG: 0.4, artefactRatio: 1.0)
        var engine = IBIEngine()
        let run = signal.run(&engine, duration: 70)
        let rising = run.ticks.filter { $0.time >= 38 && $0.time < 55 && $0.sample?.source == .spectral }
        let lag = rising.map { rate($0.time - 4) - $0.sample!.beatsPerMinute }.reduce(0, +)
            / Double(max(rising.count, 1))
        return (lag, rising.count)
    }

    @Test func publishesTheNewestWindowsPeakWhileTheRateRises() {
        // The averaged spectrum (weight 0.35 for the newest window) lags a rising rate by ≈ 1–2 windows (2.5 bpm here),
        // beyond the 8 s window's own 4 s; the newest window's peak in the same lobe does not.
        let (lag, count) = self.risingLag()
        #expect(count >= 14)
        #expect(lag < 1.2, "lag \(lag) bpm behind the window's centre")
    }
}

extension SpectralHeartRateLagTests {
    /// At rest at 90 bpm, then running (168 /min) from 40 s with the heart rising 2.5 bpm/s to 150 at 64 s.
    func onset() -> [MotionSignal.Tick] {
        let rate: (Double) -> Double = { 90 + 2.5 * min(max($0 - 40, 0), 24) }
        let signal = MotionSignal(heartRate: rate, cadence: 2.8, swingStart: 40, swingG: 1.0, artefactRatio: 2.0,
                                  wobble: 0.3)
        var engine = IBIEngine()
        return signal.run(&engine, duration: 90).ticks
    }

    @Test func staleBeatsAtARunsOnsetGiveWayToTheSpectrum() {
        // The clean beats stop when the run starts; the beat-derived rate (the last 5 s of beats; 10 s when this was
        // written) stays published for a few seconds at the resting rate, and seeding the spectral track with it held the track at 90 while the heart
        // rose: the track was lost at 52 s, nothing published until 70 s. Beats older than 2 s now give way to the
        // spectrum, which then follows the rise.
        let values = self.onset().filter { $0.time >= 42 && $0.time < 70 && $0.sample != nil }
        #expect(values.count >= 18, "\(values.count) values in 42–70 s")
        let errors = values.map { abs($0.sample!.beatsPerMinute - $0.truth) }
        #expect(errors.reduce(0, +) / Double(max(errors.count, 1)) < 11, "errors \(errors)")
        #expect(errors.allSatisfy { $0 < 18 }, "errors \(errors)")
    }
}

extension SpectralHeartRateLagTests {
    /// Walking with the arm swinging once a stride (0.9 Hz, 54 /min: its 2nd harmonic the step, 108) from the start,
    /// the heart at `bpm`: every value spectral.
    func strideWalk(bpm: Double) -> [MotionSignal.Tick] {
        let signal = MotionSignal(heartRate: { _ in bpm }, cadence: 0.9, swingG: 0.4, artefactRatio: 1.5, wobble: 0.3)
        var engine = IBIEngine()
        return signal.run(&engine, duration: 120).ticks
    }

    @Test func doesNotTakeTheStrideSwingsThirdHarmonicForThePulse() {
        // The PPG artefact's 3rd harmonic (162 /min) is no ACC peak nor an ACC peak's 2nd harmonic: unmasked, it was
        // acquired and published throughout (every value 160–163). The swing's third harmonics are masked too now.
        for bpm in [80.0, 90, 100] {
            let values = self.strideWalk(bpm: bpm).filter { $0.time >= 30 }
            #expect(values.count >= 70, "\(bpm) bpm: \(values.count) values of 90")
            let off = values.filter { abs($0.sample!.beatsPerMinute - $0.truth) > 10 }
            #expect(off.isEmpty, "\(bpm) bpm: \(off.prefix(5).map { $0.sample!.beatsPerMinute })")
        }
    }
}

/// Acquisition while the pulse is the best candidate only in runs that something else keeps breaking.
@Suite struct SpectralHeartRateAcquisitionTests {
    /// Running from the start (162 /min, artefact twice the pulse, wobble 0.3), the heart at 140 (or no pulse), and
    /// every 9 s a 3 s tone of 60 units (¾ of the pulse) at a rate that differs each time: while a tone lasts (and
    /// for the windows and averaging after it) it, not the pulse, is the best candidate.
    func burstRun(pulse: Bool, seed: UInt64) -> [MotionSignal.Tick] {
        let rates = [95.0, 182, 118, 203, 106, 168, 88, 192, 128, 176, 100, 158, 112, 196]
        let signal = MotionSignal(heartRate: { _ in 140 }, cadence: 2.7, swingG: 1.0, artefactRatio: 2,
                                  wobble: 0.3, pulse: pulse, seed: seed)
        var engine = IBIEngine()
        var index = 0
        return signal.run(&engine, duration: 120, bvp: { value in
            defer { index += 1 }
            let t = Double(index) / 64
            guard Int(t) % 9 < 3 else { return value }
            return value + 60 * sin(2 * .pi * rates[(Int(t) / 9) % rates.count] / 60 * t)
        }).ticks
    }

    @Test func acquiresAPulseWhoseRunsTheResidueBreaks() {
        // The consecutive run acquisition needs (12 s at ≥ 0.35 within ±5 bpm) never comes: without the leaky
        // evidence the first value came at 47 and 54 s, 73 and 66 of the 100 seconds from 20 s on. With it: 30 and 27 s.
        for seed: UInt64 in [7, 3] {
            let values = self.burstRun(pulse: true, seed: seed).filter { $0.sample != nil }
            let first = values.first?.time ?? .infinity
            #expect(first <= 38, "seed \(seed): first value at \(first) s")
            let right = values.filter { abs($0.sample!.beatsPerMinute - $0.truth) < 6 }
            #expect(right.count >= 80, "seed \(seed): \(right.count) right of \(values.count)")
            #expect(values.count - right.count <= 2, "seed \(seed): \(values.count - right.count) wrong")
        }
    }

    @Test func doesNotChainBurstsAtNearbyRatesIntoATrack() {
        // The same tones without a pulse: each is the best candidate for a few seconds, at its own rate. Evidence
        // that followed a moving rate (widened by ±1 bpm a second) chained 192 → 176 /min 18 s apart and published
        // 178–191 bpm from 90 s (seed 7). Evidence stays in its bins; only ±2 bpm around the candidate is summed.
        for seed: UInt64 in [7, 3] {
            let values = self.burstRun(pulse: false, seed: seed).filter { $0.sample != nil }
            #expect(values.isEmpty, "seed \(seed): \(values.prefix(5).map { ($0.time, $0.sample!.beatsPerMinute) })")
        }
    }
}
