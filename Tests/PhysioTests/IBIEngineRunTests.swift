@testable import Physio
import Testing
import TestSupport

/// Runs confirmed in motion, intervals held for confirmation, a rhythm that changes beat by beat, and the amplitude
/// check that applies only while the wrist moves.
@Suite struct IBIEngineRunTests {
    let pulse = SyntheticPulse()

    /// The wrist turning slowly: ±5 counts (0.078 g) square wave at 1 Hz on x — above the movement threshold
    /// (0.06 g), below mild motion (0.1 g).
    func slowMovement(from start: Double) -> (Double) -> (Double, Double, Double)? {
        { t in
            let phase = (t - start).truncatingRemainder(dividingBy: 1)
            return (phase < 0.5 ? 5 : -5, 0, 64)
        }
    }

    func isTrue(_ time: Double, in truth: [Double]) -> Bool {
        truth.contains { abs($0 - time) <= 2.0 / 64 }
    }

    @Test func emitsHeldIntervalsOnceTheirRunConfirmsWithinTheLatencyBudget() {
        var beats = self.pulse.beats(intervals: [Double](repeating: 0.5, count: 120))
        // A missed beat at 40 s breaks the run: the interval across it doubles and is withheld.
        let missing = beats.remove(at: 80)
        var engine = IBIEngine()
        let run = EngineRun.run(&engine, samples: self.pulse.samples(beats: beats, until: 55),
                                acc: self.slowMovement(from: self.pulse.start))
        let after = run.beats.filter { $0.beat.time > missing }
        #expect(after.count >= 6)
        guard after.count >= 6 else { return }
        // The interval across the gap is withheld, then a new run starts: intervals 1 and 2 of the run are held,
        // and withheld when the 4th confirms the run more than 1 s after their feet; the 3rd's foot is 0.5 s
        // before the 4th's, so it is emitted with it.
        #expect(after[0].beat.interval == nil)
        #expect(after[1].beat.suppression == .unconfirmed && after[1].beat.interval == nil)
        #expect(after[2].beat.suppression == .unconfirmed && after[2].beat.interval == nil)
        #expect(after[3].beat.suppression == nil && after[3].beat.interval != nil)
        #expect(after[4].beat.suppression == nil && after[4].beat.interval != nil)
        // The 3rd was emitted late (with the 4th), yet within the budget; every interval is a true one.
        #expect(after[3].confirmedAt - after[3].beat.time > 0.5)
        for ibi in run.emitted {
            #expect(ibi.confirmedAt - ibi.time <= 1.0)
            #expect(self.isTrue(ibi.time, in: beats) && self.isTrue(ibi.time - ibi.interval, in: beats))
        }
        // Beats come out in time order, each once.
        let times = run.beats.map(\.beat.time)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test func withholdsHeldIntervalsWhenTheRunBreaks() {
        var beats = self.pulse.beats(intervals: [Double](repeating: 0.5, count: 120))
        // Two missed beats five beats apart: the run between them never reaches four clean intervals.
        let first = beats.remove(at: 80)
        let second = beats.remove(at: 84)
        var engine = IBIEngine()
        let run = EngineRun.run(&engine, samples: self.pulse.samples(beats: beats, until: 55),
                                acc: self.slowMovement(from: self.pulse.start))
        // The clean run between the pulses that border the gaps (their shapes change with the long interval).
        let between = run.beats.filter { $0.beat.time > first + 0.6 && $0.beat.time < second - 0.6 }
        #expect(between.count == 2)
        #expect(between.allSatisfy { $0.beat.interval == nil && $0.beat.suppression == .unconfirmed })
        // The last was withheld as soon as the run broke, before its latency budget ran out.
        #expect(between.last.map { $0.confirmedAt - $0.beat.time < 1.0 } ?? false)
        // The same rhythm at rest is emitted without waiting for confirmation.
        var still = IBIEngine()
        let rest = EngineRun.run(&still, samples: self.pulse.samples(beats: beats, until: 55))
        #expect(rest.emitted.filter { $0.time > first + 0.6 && $0.time < second - 0.6 }.count == 2)
    }

    @Test func followsARhythmThatSlowsBeatByBeat() {
        // 120 bpm, then the heart slows by 7 % per beat to 80 bpm and stays there: every step is well inside the
        // beat-to-beat tolerance, while the new intervals reach 50 % above the median of the last eight.
        var intervals = [Double](repeating: 0.5, count: 60)
        var interval = 0.5
        while interval < 0.75 {
            interval = min(interval * 1.07, 0.75)
            intervals.append(interval)
        }
        intervals += [Double](repeating: 0.75, count: 20)
        let beats = self.pulse.beats(intervals: intervals)
        var engine = IBIEngine()
        let run = EngineRun.run(&engine, samples: self.pulse.samples(beats: beats, until: 50))
        let slowing = beats[60]
        let judged = run.beats.filter { $0.beat.time > slowing && $0.beat.time < slowing + 8 }
        #expect(judged.count >= 10)
        #expect(judged.allSatisfy { $0.beat.interval != nil })
        for ibi in run.emitted {
            #expect(self.isTrue(ibi.time, in: beats) && self.isTrue(ibi.time - ibi.interval, in: beats))
        }
    }

    @Test(arguments: [
        (0.6, 0.5, 0.55, true),  // 20 % above the median, 9 % above the previous interval
        (0.68, 0.5, 0.6, true),  // 36 % above the median, still 13 % from the previous
        (0.75, 0.5, 0.7, false),  // 50 % above the median: past the shift a rhythm makes
        (0.65, 0.5, 0.5, false),  // 30 % in one beat
        (1.0, 0.5, 0.5, false),  // a missed beat
    ])
    func followsRhythmOnlyInSmallSteps(interval: Double, typical: Double, previous: Double, expected: Bool) {
        #expect(IBIEngine.followsRhythm(interval, typical: typical, previous: previous, tolerance: 0.2, shift: 0.4)
            == expected)
    }

    @Test func checksPulseAmplitudeOnlyWhileTheWristMoves() {
        let beats = self.pulse.beats(intervals: [Double](repeating: 0.6, count: 90))
        let target = 60
        var big = self.pulse
        // One pulse six times the size of its neighbours: physiology at rest, an artefact's mark in motion.
        big.scale = { $0 == target ? 6 : 1 }
        let samples = big.samples(beats: beats, until: 50)
        var still = IBIEngine()
        let rest = EngineRun.run(&still, samples: samples)
        #expect(rest.emitted.contains { abs($0.time - beats[target]) < 0.05 })
        var moving = IBIEngine()
        let motion = EngineRun.run(&moving, samples: samples, acc: self.slowMovement(from: self.pulse.start))
        let judged = motion.beats.filter { abs($0.beat.time - beats[target]) < 0.05 }
        #expect(judged.count == 1)
        #expect(judged.allSatisfy { $0.beat.interval == nil && $0.beat.suppression == .pulseShape })
    }

    @Test func checksTheFootOnlyWhileTheWristMoves() {
        let beats = self.pulse.beats(intervals: [Double](repeating: 0.6, count: 90))
        let target = 60
        // A dip 0.1 s before pulse 60's foot moves its trough away from the upstroke. At rest that trough is the beat's
        // fiducial (Empatica's too); while the wrist moves it is an artefact's mark and the pulse is withheld.
        let dip = beats[target] - 0.1
        let samples = self.pulse.samples(beats: beats, until: 50).map { sample in
            (sample.value - 20 * SyntheticPulse.bump(sample.time - dip, centre: 0, width: 0.02), sample.time)
        }
        var still = IBIEngine()
        let rest = EngineRun.run(&still, samples: samples)
        #expect(rest.emitted.contains { abs($0.time - dip) <= 2.0 / 64 })
        var moving = IBIEngine()
        let motion = EngineRun.run(&moving, samples: samples, acc: self.slowMovement(from: self.pulse.start))
        #expect(motion.emitted.contains { $0.time > beats[target - 5] && $0.time < beats[target - 1] })
        let judged = motion.beats.filter { abs($0.beat.time - dip) <= 2.0 / 64 }
        #expect(judged.count == 1)
        #expect(judged.allSatisfy { $0.beat.interval == nil && $0.beat.suppression == .pulseShape })
    }

    @Test func asksForACloserShapeWhileTheWristMoves() {
        let beats = self.pulse.beats(intervals: [Double](repeating: 0.6, count: 90))
        let target = beats[60]
        // A square wobble over pulse 60's upstroke leaves it clearly a pulse (correlation ≈ 0.75 with the template):
        // clean enough at rest, not while the wrist moves, when only the shape tells a pulse from an artefact.
        let samples = self.pulse.samples(beats: beats, until: 50).map { sample in
            let tau = sample.time - target
            guard tau >= -0.1 && tau < 0.25 else { return sample }
            let phase = tau * 9
            return (sample.value + 28 * (phase - phase.rounded(.down) < 0.5 ? 1.0 : -1.0), sample.time)
        }
        var still = IBIEngine()
        let rest = EngineRun.run(&still, samples: samples)
        let atRest = rest.beats.filter { abs($0.beat.time - target) <= 2.0 / 64 }
        let configuration = still.configuration
        #expect(atRest.count == 1)
        #expect(atRest.allSatisfy { entry in
            let correlation = entry.beat.templateCorrelation ?? 0
            return entry.beat.interval != nil && correlation >= configuration.minimumTemplateCorrelation
                && correlation < configuration.confirmingCorrelation
        })
        var moving = IBIEngine()
        let motion = EngineRun.run(&moving, samples: samples, acc: self.slowMovement(from: self.pulse.start))
        #expect(motion.emitted.contains { $0.time > beats[55] && $0.time < beats[59] })
        let judged = motion.beats.filter { abs($0.beat.time - target) <= 2.0 / 64 }
        #expect(judged.count == 1)
        #expect(judged.allSatisfy { $0.beat.interval == nil && $0.beat.suppression == .pulseShape })
    }

    /// A quarter longer or shorter than the rhythm is still sinus rhythm (a breath, a vagal pause); a detector error
    /// changes the interval by at least a third (an extra pulse at the dicrotic wave) or doubles it (a missed beat).
    @Test(arguments: [
        (0.75, true), (0.45, true), (0.4, false), (0.85, false), (1.2, false), (0.3, false),
    ])
    func toleratesAQuarterButNotADetectorError(interval: Double, expected: Bool) {
        let tolerance = IBIConfiguration().maximumRelativeChange
        #expect(IBIEngine.isRegular(interval, typical: 0.6, previous: 0.6, tolerance: tolerance) == expected)
    }
}
