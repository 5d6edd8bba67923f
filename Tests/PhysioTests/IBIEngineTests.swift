import Physio
import Testing

@Suite struct IBIEngineTests {
    let pulse = SyntheticPulse()

    /// A regular rhythm with a little sinus variability.
    func rhythm(bpm: Double, count: Int) -> [Double] {
        let base = 60 / bpm
        return (0..<count).map { i in base * (1 + 0.03 * ((i % 4 == 0) ? 1 : (i % 4 == 2 ? -1 : 0))) }
    }

    func nearest(_ time: Double, in truth: [Double]) -> Double {
        truth.min(by: { abs($0 - time) < abs($1 - time) }) ?? .infinity
    }

    @Test(arguments: [40.0, 60.0, 100.0, 150.0, 200.0])
    func emitsIntervalsMatchingTruthAcrossHeartRates(bpm: Double) {
        let beats = self.pulse.beats(intervals: self.rhythm(bpm: bpm, count: Int(bpm * 1.2)))
        var engine = IBIEngine()
        let run = EngineRun.run(&engine, samples: self.pulse.samples(beats: beats, until: 70))
        let emitted = run.emitted
        let truthAfterWarmUp = beats.filter { $0 > self.pulse.start + 21 && $0 < self.pulse.start + 69 }
        #expect(Double(emitted.count) >= 0.9 * Double(truthAfterWarmUp.count))
        for ibi in emitted {
            let end = self.nearest(ibi.time, in: beats)
            let start = self.nearest(ibi.time - ibi.interval, in: beats)
            // The foot is a sampled trough: within two samples of the truth, the interval within two samples.
            #expect(abs(ibi.time - end) <= 2.0 / 64)
            #expect(abs(ibi.interval - (end - start)) <= 2.0 / 64)
        }
    }

    @Test func staysSilentDuringWarmUp() {
        let beats = self.pulse.beats(intervals: self.rhythm(bpm: 75, count: 60))
        var engine = IBIEngine()
        let run = EngineRun.run(&engine, samples: self.pulse.samples(beats: beats, until: 45))
        let early = run.emitted.filter { $0.time - $0.interval < self.pulse.start + 20 }
        #expect(early.isEmpty)
        #expect(run.beats.contains { $0.beat.suppression == .warmingUp })
        #expect(!run.emitted.isEmpty)
        let first = run.emitted.first.map { $0.time - self.pulse.start } ?? .infinity
        #expect(first < 23)
    }

    @Test func emitsEachIntervalWithinOneSecondOfItsBeat() {
        for bpm in [40.0, 120.0, 200.0] {
            let beats = self.pulse.beats(intervals: self.rhythm(bpm: bpm, count: Int(bpm)))
            var engine = IBIEngine()
            let run = EngineRun.run(&engine, samples: self.pulse.samples(beats: beats, until: 45))
            #expect(!run.emitted.isEmpty)
            for ibi in run.emitted {
                #expect(ibi.confirmedAt - ibi.time <= 1.0)
                #expect(ibi.confirmedAt >= ibi.time)
            }
        }
    }

    @Test func suppressesBeatsWhileTheArmMoves() {
        let beats = self.pulse.beats(intervals: self.rhythm(bpm: 80, count: 80))
        let start = self.pulse.start
        // Shaking between 30 s and 40 s: ±0.75 g at 3 Hz on x.
        let shake: (Double) -> (Double, Double, Double)? = { t in
            let s = t - start
            guard s >= 30 && s < 40 else { return (0, 0, 64) }
            let phase = (s * 3).truncatingRemainder(dividingBy: 1)
            return (phase < 0.5 ? 48 : -48, 0, 64)
        }
        var engine = IBIEngine()
        let run = EngineRun.run(&engine, samples: self.pulse.samples(beats: beats, until: 55), acc: shake)
        let inMotion = run.emitted.filter { $0.time - $0.interval < start + 40.6 && $0.time > start + 30 }
        #expect(inMotion.isEmpty)
        #expect(run.beats.contains { $0.beat.suppression == .motion })
        #expect(run.emitted.contains { $0.time > start + 42 })
        #expect(run.emitted.contains { $0.time < start + 29 })
    }

    @Test func withholdsIntervalsAroundAnArtefact() {
        var beats = self.pulse.beats(intervals: self.rhythm(bpm: 70, count: 70))
        // A missed beat: the pulse at index 35 vanishes, so one interval doubles.
        let missing = beats.remove(at: 35)
        var engine = IBIEngine()
        let run = EngineRun.run(&engine, samples: self.pulse.samples(beats: beats, until: 58))
        let spanning = run.emitted.filter { $0.time > missing && $0.time - $0.interval < missing }
        #expect(spanning.isEmpty)
        #expect(run.beats.contains { $0.beat.suppression == .irregular || $0.beat.suppression == .implausible })
    }

    @Test func doesNotDependOnAmplitudeScale() {
        let beats = self.pulse.beats(intervals: self.rhythm(bpm: 90, count: 60))
        var small = self.pulse
        small.amplitude = 0.01
        var large = self.pulse
        large.amplitude = 50_000
        var engineA = IBIEngine()
        var engineB = IBIEngine()
        let a = EngineRun.run(&engineA, samples: small.samples(beats: beats, until: 40))
        let b = EngineRun.run(&engineB, samples: large.samples(beats: beats, until: 40))
        #expect(!a.emitted.isEmpty)
        #expect(a.emitted.map(\.time) == b.emitted.map(\.time))
    }

    @Test func restartsWarmUpOnReset() {
        let beats = self.pulse.beats(intervals: self.rhythm(bpm: 75, count: 100))
        let samples = self.pulse.samples(beats: beats, until: 75)
        var engine = IBIEngine()
        let first = EngineRun.run(&engine, samples: Array(samples.prefix(64 * 30)))
        #expect(!first.emitted.isEmpty)
        engine.reset()
        let second = EngineRun.run(&engine, samples: Array(samples.dropFirst(64 * 30)))
        let resetAt = self.pulse.start + 30
        #expect(second.emitted.allSatisfy { $0.time - $0.interval >= resetAt + 20 })
        #expect(!second.emitted.isEmpty)
    }

    @Test func neverSpansAGapInTheStream() {
        let beats = self.pulse.beats(intervals: self.rhythm(bpm: 75, count: 80))
        let samples = self.pulse.samples(beats: beats, until: 60)
        // Two seconds of lost packets at 35 s.
        let kept = samples.filter { $0.time < self.pulse.start + 35 || $0.time >= self.pulse.start + 37 }
        var engine = IBIEngine()
        let run = EngineRun.run(&engine, samples: kept)
        let gapStart = self.pulse.start + 35
        let gapEnd = self.pulse.start + 37
        #expect(run.emitted.allSatisfy { !($0.time >= gapEnd && $0.time - $0.interval < gapEnd) })
        #expect(run.emitted.contains { $0.time > gapEnd })
        #expect(run.emitted.contains { $0.time < gapStart })
    }

    @Test func publishesHeartRateOncePerSecond() {
        let beats = self.pulse.beats(intervals: [Double](repeating: 0.75, count: 70))
        var engine = IBIEngine()
        let run = EngineRun.run(&engine, samples: self.pulse.samples(beats: beats, until: 50))
        #expect(run.heartRates.count >= 15)
        for rate in run.heartRates {
            #expect(abs(rate.beatsPerMinute - 80) < 1.5)
            #expect(rate.time == rate.time.rounded(.down))
        }
        let times = run.heartRates.map(\.time)
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 >= 1 })
    }
}
