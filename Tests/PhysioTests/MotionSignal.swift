import Glibc
import Physio
import TestSupport

/// A wrist PPG with exact heart rate, optionally corrupted by arm swing at a cadence that also shows in ACC — the
/// shape of the simulator's walking/running episodes, small enough for unit tests.
struct MotionSignal {
    /// True heart rate at a time (seconds from start).
    var heartRate: (Double) -> Double
    /// Arm-swing cadence in Hz, nil at rest; ``swingStart`` onwards.
    var cadence: Double?
    var swingStart = 0.0
    /// Peak ACC of the swing, g.
    var swingG = 0.4
    /// PPG artefact amplitude relative to the pulse's.
    var artefactRatio = 1.0
    /// Broadband wobble in the PPG that the accelerometer does not explain, relative to the artefact's amplitude
    /// (noise low-passed at 8 Hz, unit standard deviation; bench/ibi/walk.py uses 0.3). Only while moving.
    var wobble = 0.0
    /// Whether there is a pulse at all (off-wrist: no).
    var pulse = true
    /// Phases (radians) of the artefact's fundamental, 2nd and 3rd harmonic behind the swing: they set the
    /// artefact's shape (bench/ibi/walk.py draws them at random per recording).
    var artefactPhases = (1.1, 2.0, 0.4)
    var seed: UInt64 = 7
    let start = 1_700_000_000.0

    struct Tick {
        var time: Double
        var truth: Double
        var sample: HeartRateSample?
    }

    /// Runs an engine over `duration` seconds; returns one entry per whole second the engine ticked, every
    /// filtered BVP value and the time of every beat the engine emitted an interval for. `bvp` and `acc` transform
    /// the samples on their way into the engine (another gain, the band worn another way round).
    func run(_ engine: inout IBIEngine, duration: Double, from offset: Double = 0,
             bvp transform: (Double) -> Double = { $0 },
             acc orient: (Double, Double, Double) -> (Double, Double, Double) = { ($0, $1, $2) })
        -> (ticks: [Tick], filtered: [Double], raw: [Double], beats: [Double])
    {
        var random = SplitMix64(seed: self.seed)
        var ticks: [Tick] = []
        var filtered: [Double] = []
        var raw: [Double] = []
        var beats: [Double] = []
        var phase = 0.0
        var swing = 0.0
        var wander = 0.0
        let count = Int(duration * 64)
        for index in 0..<count {
            let t = offset + Double(index) / 64
            let hr = self.heartRate(t)
            phase += 2 * Double.pi * hr / 60 / 64
            let moving = self.cadence != nil && t >= self.swingStart
            if moving, let cadence = self.cadence { swing += 2 * Double.pi * cadence / 64 }
            if index % 2 == 0 {
                let noise = { Double(random.next() % 1000) / 1000 - 0.5 }
                var x = 8 + noise(), y = -4 + noise(), z = 62 + noise()
                if moving {
                    x += 64 * self.swingG * (sin(swing) + 0.3 * sin(2 * swing))
                    y += 32 * self.swingG * sin(swing + 0.7)
                    z += 25 * self.swingG * sin(2 * swing + 0.3)
                }
                let (ax, ay, az) = orient(x.rounded(), y.rounded(), z.rounded())
                engine.appendACC(x: ax, y: ay, z: az, at: self.start + t)
            }
            let u = (phase / (2 * Double.pi)).truncatingRemainder(dividingBy: 1)
            var value = 0.0
            if self.pulse {
                value = 80 * (exp(-((u - 0.2) / 0.08) * ((u - 0.2) / 0.08))
                    + 0.4 * exp(-((u - 0.45) / 0.1) * ((u - 0.45) / 0.1)) + 0.3 * (1 - u))
            }
            value += 2 * (Double(random.next() % 1000) / 1000 - 0.5)
            if moving && self.wobble > 0 {
                // One pole at 8 Hz (α = 1 − e^(−2π·8/64) ≈ 0.54) on uniform noise (σ 0.29): σ ≈ 0.17, scaled to 1.
                wander += 0.54 * (Double(random.next() % 1000) / 1000 - 0.5 - wander)
                value += 80 * self.artefactRatio * self.wobble * wander / 0.17
            }
            if moving {
                let (a, b, c) = self.artefactPhases
                value += 80 * self.artefactRatio * (sin(swing + a) + 0.5 * sin(2 * swing + b)
                    + 0.25 * sin(3 * swing + c))
            }
            value = transform(value)
            raw.append(value)
            let output = engine.appendBVP(value, at: self.start + t)
            filtered.append(output.filteredBVP ?? value)
            if let beat = output.beat, beat.interval != nil { beats.append(beat.time - self.start) }
            if let sample = output.heartRate {
                ticks.append(Tick(time: sample.time - self.start, truth: self.heartRate(sample.time - self.start),
                                  sample: sample))
            }
        }
        return (ticks, filtered, raw, beats)
    }
}
