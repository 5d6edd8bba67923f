#if canImport(Glibc)
import Glibc
#endif
import E4
import EmpaLink

/// The live decode path while the wrist swings (SPEC §8, §19): BVP carrying a 2 Hz arm-swing artefact (250 counts
/// against the 400-count pulse; larger ones make BVP deltas the encoder cannot code) and ACC swinging at 2 Hz
/// (0.5 g), so that every heart-rate tick without a beat-derived value goes through the motion-artefact filter and
/// the spectral estimator (``Physio/SpectralHeartRate``).
enum DeviceStreamsMotionChecks {
    static func run(iterations: Int) -> [AllocationMeasurement] {
        let start = DeviceStreamsChecks.start
        let bvp = DeviceStreamsChecks.pulsePackets(artefact: 250)
        let sink = CountingSink()
        var proxy = CountingSink.Proxy(owner: sink)
        var streams = DeviceStreams()
        var packet = E4PacketBytes()
        var sent = (bvp: 0, acc: 0)

        func sendBVP() {
            sent.bvp += 1
            let arrival = start + Double(sent.bvp) * 11 / 64
            bvp[sent.bvp & 63].withUnsafeBytes { streams.receive(.bvp, $0, arrival: arrival, into: &proxy) }
        }
        func sendACC() {
            sent.acc += 1
            var x = InlineArray<6, Int8>(repeating: 0)
            let zero = InlineArray<6, Int8>(repeating: 0)
            let gravity = InlineArray<6, Int8>(repeating: 64)
            for index in 0..<6 {
                let t = Double(sent.acc * 6 + index) / 32
                x[index] = Int8((32 * sin(2 * Double.pi * 2 * t)).rounded())
            }
            E4ACC.encode(x: x, y: zero, z: gravity, counter: UInt16(truncatingIfNeeded: sent.acc), into: &packet)
            let arrival = start + Double(sent.acc) * 6 / 32
            packet.withUnsafeBytes { streams.receive(.acc, $0, arrival: arrival, into: &proxy) }
        }
        // 90 s uncounted: past the estimator's 8 s window and the beat HR's 10 s, into steady motion.
        for _ in 0..<(90 * 64 / 11) {
            sendBVP()
            sendACC()
        }
        let before = sink.snapshot
        // Each iteration is 11/64 s: at least 6 s of signal, so the 1 Hz estimate runs while counting.
        var pair = AllocationMeasurement.measure("device.receive.bvp+acc.motion", iterations: max(iterations, 40),
                                                 warmUp: 0) {
            sendBVP()
            sendACC()
        }
        let during = sink.snapshot - before
        if during.heartRates == 0 {
            pair.failure = "no heart rate while counting: the spectral path was not exercised"
        }
        printError("device.receive.bvp+acc.motion: \(during.intervals) IBIs, \(during.heartRates) HR values while counting")
        return [pair]
    }
}
