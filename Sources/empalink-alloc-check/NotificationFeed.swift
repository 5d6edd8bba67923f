import Agent
import E4

/// One wristband's BVP and ACC notifications at their real rates (5.8 and 5.3 per second): a 66 bpm pulse,
/// wrist at rest, so the IBI engine emits beats.
struct NotificationFeed {
    let bvp = DeviceStreamsChecks.pulsePackets()
    var acc = E4PacketBytes()
    var sent = 0

    mutating func sendPair(to probe: AgentPipelineProbe) {
        self.sent += 1
        let bvpArrival = DeviceStreamsChecks.start + Double(self.sent) * 11 / 64
        self.bvp[self.sent & 63].withUnsafeBytes { probe.deliver(.bvp, $0, arrival: bvpArrival) }
        let zero = InlineArray<6, Int8>(repeating: 0)
        let gravity = InlineArray<6, Int8>(repeating: 64)
        E4ACC.encode(x: zero, y: zero, z: gravity, counter: UInt16(truncatingIfNeeded: self.sent), into: &self.acc)
        let accArrival = DeviceStreamsChecks.start + Double(self.sent) * 6 / 32
        self.acc.withUnsafeBytes { probe.deliver(.acc, $0, arrival: accArrival) }
    }
}
