import Physio

/// A deterministic synthetic PPG with known beat times, for the engine's unit tests.
///
/// Each beat is a pulse of a systolic wave and a smaller dicrotic wave rising from its foot; the foot (the
/// beat's truth time) is where the pulse starts, after the previous pulse has decayed.
struct SyntheticPulse {
    var rate = 64.0
    var start = 1_700_000_000.0
    var amplitude = 100.0
    /// Relative size of the pulse with a given index (1 = normal); lets a test shrink or grow single pulses.
    var scale: @Sendable (Int) -> Double = { _ in 1 }

    /// Beat (foot) times for `intervals`, starting 0.3 s after `start`.
    func beats(intervals: [Double]) -> [Double] {
        var times: [Double] = []
        var t = self.start + 0.3
        for interval in intervals {
            times.append(t)
            t += interval
        }
        times.append(t)
        return times
    }

    /// The BVP value at `time` for pulses starting at `beats`.
    func value(at time: Double, beats: [Double]) -> Double {
        var total = 0.0
        for (index, beat) in beats.enumerated() {
            let tau = time - beat
            if tau < 0 || tau > 2.5 { continue }
            let next = index + 1 < beats.count ? beats[index + 1] - beat : 0.8
            let scale = min(max(next / 0.8, 0.45), 1.3)
            let systolic = Self.bump(tau, centre: 0.14 * scale, width: 0.05 * scale)
            let dicrotic = 0.45 * Self.bump(tau, centre: 0.36 * scale, width: 0.07 * scale)
            // A slow diastolic decay that ends near zero by the next foot.
            let decay = 0.25 * Self.smoothStep(tau / (0.12 * scale)) * Self.exponential(-tau / (0.25 * scale))
            total += self.amplitude * self.scale(index) * (systolic + dicrotic + decay)
        }
        return total
    }

    /// Samples from `start` to `end` (seconds since `start`).
    func samples(beats: [Double], until end: Double) -> [(value: Double, time: Double)] {
        let count = Int(end * self.rate)
        return (0..<count).map { i in
            let t = self.start + Double(i) / self.rate
            return (self.value(at: t, beats: beats), t)
        }
    }

    static func bump(_ x: Double, centre: Double, width: Double) -> Double {
        let u = (x - centre) / width
        return Self.exponential(-u * u)
    }

    static func smoothStep(_ x: Double) -> Double {
        let c = min(max(x, 0), 1)
        return c * c * (3 - 2 * c)
    }

    /// e^x by range reduction and a Taylor series (the test target stays Foundation-free like the module).
    static func exponential(_ x: Double) -> Double {
        if x < -40 { return 0 }
        var n = 0
        var r = x
        while abs(r) > 0.5 {
            r /= 2
            n += 1
        }
        var sum = 1.0
        var term = 1.0
        for k in 1..<16 {
            term *= r / Double(k)
            sum += term
        }
        for _ in 0..<n { sum *= sum }
        return sum
    }
}

/// Everything one engine run produced, with the sample time that produced each beat.
struct EngineRun {
    var beats: [(beat: DetectedBeat, confirmedAt: Double)] = []
    var heartRates: [HeartRateSample] = []

    var emitted: [(time: Double, interval: Double, confirmedAt: Double)] {
        self.beats.compactMap { entry in
            entry.beat.interval.map { (entry.beat.time, $0, entry.confirmedAt) }
        }
    }

    static func run(_ engine: inout IBIEngine, samples: [(value: Double, time: Double)],
                    acc: (Double) -> (Double, Double, Double)? = { _ in nil }) -> EngineRun {
        var run = EngineRun()
        var nextACC = samples.first?.time ?? 0
        for sample in samples {
            while nextACC <= sample.time {
                if let (x, y, z) = acc(nextACC) {
                    engine.appendACC(x: x, y: y, z: z, at: nextACC)
                }
                nextACC += 1.0 / 32
            }
            let output = engine.appendBVP(sample.value, at: sample.time)
            if let beat = output.beat { run.beats.append((beat, sample.time)) }
            if let heartRate = output.heartRate { run.heartRates.append(heartRate) }
        }
        return run
    }
}
