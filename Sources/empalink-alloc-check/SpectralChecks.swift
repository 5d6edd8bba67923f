#if canImport(Glibc)
import Glibc
#endif
import Physio

/// The spectral estimator alone (``Physio/SpectralHeartRate``, SPEC §19) beside the cadence: the heart at 146 bpm,
/// 10 bpm below a 156 /min arm swing whose artefact is 3 × the pulse. The 8 s window cannot resolve the two, so every
/// second past the first 10 s of coasting reads the 16 s window too (``SpectralHeartRate`` `zoomTrack`); the device
/// cases' pulses lie far from their cadence and never reach it. One iteration is one second: 64 BVP and 32 ACC
/// samples and one estimate. It must allocate nothing.
enum SpectralChecks {
    static func run(iterations: Int) -> [AllocationMeasurement] {
        var estimator = SpectralHeartRate()
        var second = 0
        var values = 0
        func oneSecond() {
            for sample in 0..<64 {
                let t = Double(second) + Double(sample) / 64
                let pulse = 80 * sin(2 * Double.pi * 146 / 60 * t)
                estimator.appendBVP(pulse + 240 * sin(2 * Double.pi * 156 / 60 * t + 1.1))
                if sample % 2 == 0 {
                    estimator.appendACC(x: (8 + 64 * sin(2 * Double.pi * 156 / 60 * t)).rounded(), y: -4, z: 62)
                }
            }
            if second < 9 { estimator.seed(beatsPerMinute: 146) }  // clean beats at first
            if estimator.estimate() != nil { values += 1 }
            second += 1
        }
        // 30 s uncounted: past the 16 s window and the 10 s a hold may last.
        for _ in 0..<30 { oneSecond() }
        let counted = max(iterations / 25, 40)
        values = 0
        var measurement = AllocationMeasurement.measure("physio.spectral.cadence-lobe", iterations: counted,
                                                        warmUp: 0) { oneSecond() }
        if values < counted * 3 / 4 {
            measurement.failure = "\(values) values in \(counted) s: the long window's path was not exercised"
        }
        printError("physio.spectral.cadence-lobe: \(values) heart-rate values in \(counted) s")
        return [measurement]
    }
}
