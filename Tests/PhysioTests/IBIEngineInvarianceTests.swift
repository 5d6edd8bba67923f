import Physio
import Testing

/// What a recording the engine has never seen may do differently and must not matter: the BVP's gain (another
/// sensor, another perfusion on a quiet sensor) and the way the band is worn (the accelerometer's axes turned,
/// rotated or mirrored). In motion, so that the artefact filter, the motion rules and the spectral heart rate all
/// take part, not only the beats at rest (`IBIEngineTests.doesNotDependOnAmplitudeScale`).
/// bench/ibi/invariance.py checks the same on every real E4 set.
@Suite struct IBIEngineInvarianceTests {
    /// Rest, then walking with the heart rising: beats at rest and early on, spectral values through the swing.
    let signal = MotionSignal(
        heartRate: { t in t < 45 ? 75 : min(110, 75 + (t - 45) * 0.5) }, cadence: 1.8, swingStart: 45, swingG: 0.5,
        artefactRatio: 1.5, wobble: 0.3)

    typealias Run = (ticks: [MotionSignal.Tick], filtered: [Double], raw: [Double], beats: [Double])

    func run(bvp: @escaping (Double) -> Double = { $0 },
             acc: @escaping (Double, Double, Double) -> (Double, Double, Double) = { ($0, $1, $2) }) -> Run {
        var engine = IBIEngine()
        return self.signal.run(&engine, duration: 135, bvp: bvp, acc: acc)
    }

    /// The same beats, and the same heart rate each second from the same source at the same confidence.
    func expectSame(_ a: Run, _ b: Run, _ label: String) {
        #expect(a.beats == b.beats, "\(label): beats")
        #expect(a.ticks.count == b.ticks.count, "\(label): ticks")
        // The first second that differs, if any.
        let differing = zip(a.ticks, b.ticks).first { x, y in
            x.time != y.time || x.sample?.source != y.sample?.source
                || abs((x.sample?.beatsPerMinute ?? -1) - (y.sample?.beatsPerMinute ?? -1)) >= 1e-6
                || abs((x.sample?.confidence ?? -1) - (y.sample?.confidence ?? -1)) >= 1e-9
        }
        #expect(differing == nil, Comment(rawValue: "\(label): \(String(describing: differing))"))
    }

    @Test func doesNotDependOnTheBVPGainInMotion() {
        let base = self.run()
        // The run exercises both paths: beats, and spectral values while the arm swings.
        #expect(base.beats.count > 25)
        #expect(base.ticks.filter { $0.sample?.source == .spectral }.count > 30)
        // Powers of two scale every product exactly, so any difference is a constant in BVP units.
        self.expectSame(base, self.run(bvp: { $0 / 64 }), "BVP / 64")
        self.expectSame(base, self.run(bvp: { $0 * 64 }), "BVP × 64")
    }

    @Test func doesNotDependOnHowTheBandIsWorn() {
        let base = self.run()
        self.expectSame(base, self.run(acc: { x, y, z in (-x, -y, z) }), "turned")
        self.expectSame(base, self.run(acc: { x, y, z in (-x, y, -z) }), "mirrored")
        self.expectSame(base, self.run(acc: { x, y, z in (z, x, y) }), "rotated")
    }
}
