import Bluetooth
import E4
import EmpaLink

/// The decode path as the device manager takes it (SPEC §15): through the profile seam, an `any ProfileDecoder`
/// made by the E4 profile, addressed by channel. The existential call, generic over the sink, must allocate no more
/// than ``DeviceStreams`` called directly: nothing.
enum ProfileSeamChecks {
    static func run(iterations: Int) -> [AllocationMeasurement] {
        let profile: any DeviceProfile = E4DeviceProfile()
        let channels = profile.characteristics
        guard let bvpChannel = channels.firstIndex(where: { $0.uuid == E4Stream.bvp.characteristic }),
              let accChannel = channels.firstIndex(where: { $0.uuid == E4Stream.acc.characteristic })
        else {
            var missing = AllocationMeasurement.measure("profile.receive.bvp+acc", iterations: 1, warmUp: 0) {}
            missing.failure = "the E4 profile has no BVP or ACC characteristic"
            return [missing]
        }
        let decoder = profile.makeDecoder()
        let bvp = DeviceStreamsChecks.pulsePackets()
        let sink = CountingSink()
        var proxy = CountingSink.Proxy(owner: sink)
        var acc = E4PacketBytes()
        var sent = 0
        let zero = InlineArray<6, Int8>(repeating: 0)
        let gravity = InlineArray<6, Int8>(repeating: 64)

        func sendPair() {
            sent += 1
            let bvpArrival = DeviceStreamsChecks.start + Double(sent) * 11 / 64
            bvp[sent & 63].withUnsafeBytes {
                decoder.receive(channel: bvpChannel, $0, arrival: bvpArrival, into: &proxy)
            }
            E4ACC.encode(x: zero, y: zero, z: gravity, counter: UInt16(truncatingIfNeeded: sent), into: &acc)
            let accArrival = DeviceStreamsChecks.start + Double(sent) * 6 / 32
            acc.withUnsafeBytes { decoder.receive(channel: accChannel, $0, arrival: accArrival, into: &proxy) }
        }

        // Past the IBI engine's start-up, uncounted, so beats are emitted while counting.
        for _ in 0..<(60 * 64 / 11) { sendPair() }
        let before = sink.snapshot
        var pair = AllocationMeasurement.measure("profile.receive.bvp+acc", iterations: iterations, warmUp: 0) {
            sendPair()
        }
        let during = sink.snapshot - before
        if during.samples != iterations || during.accelerations != iterations {
            pair.failure = "\(during.samples) BVP and \(during.accelerations) ACC batches for \(iterations) pairs"
        } else if during.intervals == 0 {
            pair.failure = "no IBI while counting: the IBI path was not exercised"
        }
        return [pair]
    }
}
