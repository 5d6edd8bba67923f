import Physio

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
