#if canImport(Glibc)
import Glibc
#endif
import E4

/// Pre-encoded notifications of one characteristic, laid out back to back (20-byte stride), so a decode loop
/// reads them the way the agent reads a socket buffer and nothing is encoded while the clock runs.
///
/// The signals are plausible rather than physiological: a 70 bpm pulse for BVP (so the IBI engine finds beats),
/// gravity on z for ACC, 4 µS for EDA, 33.5 °C for the skin. Counters advance by one per packet as on a wristband.
struct PacketCorpus {
    static let stride = E4PacketBytes.capacity

    let stream: E4Stream
    /// `count` packets of `length` bytes at offsets `index * stride`.
    let bytes: [UInt8]
    let length: Int
    let count: Int

    init(stream: E4Stream, count: Int) {
        self.stream = stream
        self.count = count
        var bytes = [UInt8](repeating: 0, count: count * Self.stride)
        var length = 0
        var packet = E4PacketBytes()
        var bvpEncoder = E4BVPEncoder()
        for index in 0..<count {
            switch stream {
            case .bvp:
                var green = InlineArray<11, Int>(repeating: 0)
                var red = InlineArray<11, Int>(repeating: 0)
                for sample in 0..<E4BVP.samplesPerPacket {
                    let t = Double(index * E4BVP.samplesPerPacket + sample) / 64
                    let pulse = Self.pulse(at: t, beatsPerMinute: 70)
                    green[sample] = Int(-250 * pulse)
                    red[sample] = Int(-150 * pulse)
                }
                bvpEncoder.encode(green: &green, red: &red, into: &packet)
            case .acc:
                var x = InlineArray<6, Int8>(repeating: 0)
                var y = InlineArray<6, Int8>(repeating: 0)
                var z = InlineArray<6, Int8>(repeating: 0)
                for sample in 0..<E4ACC.samplesPerPacket {
                    let wobble = Int8((index + sample) % 3) - 1
                    x[sample] = 3 &+ wobble
                    y[sample] = -2
                    z[sample] = 62 &- wobble
                }
                E4ACC.encode(x: x, y: y, z: z, counter: UInt16(truncatingIfNeeded: index), into: &packet)
            case .gsr:
                var codes = InlineArray<6, UInt32>(repeating: 0)
                for sample in 0..<E4GSR.samplesPerPacket {
                    codes[sample] = E4GSR.code(microsiemens: 4 + 0.01 * Double((index + sample) % 50))
                }
                E4GSR.encode(codes: &codes, counter: UInt16(truncatingIfNeeded: index), into: &packet)
            case .temp:
                var raw = InlineArray<8, UInt16>(repeating: 0)
                for sample in 0..<E4Temperature.samplesPerPacket {
                    raw[sample] = E4Temperature.raw(celsius: 33.5 + 0.02 * Double((index + sample) % 10))
                }
                E4Temperature.encode(raw: raw, counter: UInt32(truncatingIfNeeded: index), into: &packet)
            case .battery:
                E4Battery.encode(percent: UInt8(95 - index % 50), into: &packet)
            case .tag:
                E4Control.encodeTag(into: &packet)
            }
            length = packet.count
            for offset in 0..<packet.count {
                bytes[index * Self.stride + offset] = packet[offset]
            }
        }
        self.bytes = bytes
        self.length = length
    }

    /// A pulse wave in 0…1 that peaks once per beat: a raised cosine over the first 40 % of the interval.
    static func pulse(at t: Double, beatsPerMinute: Double) -> Double {
        let interval = 60 / beatsPerMinute
        let phase = (t / interval).truncatingRemainder(dividingBy: 1)
        guard phase < 0.4 else { return 0 }
        return 0.5 - 0.5 * cos(2 * Double.pi * phase / 0.4)
    }
}
