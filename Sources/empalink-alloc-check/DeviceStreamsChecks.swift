#if canImport(Glibc)
import Glibc
#endif
import E4
import EmpaLink

/// The live decode path (SPEC §8): ``DeviceStreams/receive(_:_:arrival:into:)`` with decoders, stream clocks and
/// the IBI engine, into a sink that only counts. Packets arrive at the streams' real rates, so after warm-up the
/// IBI engine is past its start-up and emits beats and heart rate during the measurement.
enum DeviceStreamsChecks {
    /// Unix time of the first packet; any value works, this one is recent.
    static let start = 1_700_000_000.0

    static func run(iterations: Int) -> [AllocationMeasurement] {
        var results: [AllocationMeasurement] = []
        let bvp = Self.pulsePackets()
        let sink = CountingSink()
        var proxy = CountingSink.Proxy(owner: sink)
        var streams = DeviceStreams()
        var packet = E4PacketBytes()
        // Packets per stream so far; each stream's arrival time follows from its own count.
        var sent = (bvp: 0, acc: 0, gsr: 0, temp: 0)

        func sendBVP() {
            sent.bvp += 1
            let arrival = Self.start + Double(sent.bvp) * 11 / 64
            bvp[sent.bvp & 63].withUnsafeBytes { streams.receive(.bvp, $0, arrival: arrival, into: &proxy) }
        }
        func sendACC() {
            sent.acc += 1
            // At rest, wrist flat: 1 g on z. No motion, so the IBI engine keeps emitting beats.
            let zero = InlineArray<6, Int8>(repeating: 0)
            let gravity = InlineArray<6, Int8>(repeating: 64)
            E4ACC.encode(x: zero, y: zero, z: gravity, counter: UInt16(truncatingIfNeeded: sent.acc), into: &packet)
            let arrival = Self.start + Double(sent.acc) * 6 / 32
            packet.withUnsafeBytes { streams.receive(.acc, $0, arrival: arrival, into: &proxy) }
        }
        func sendGSR() {
            sent.gsr += 1
            var codes = InlineArray<6, UInt32>(repeating: UInt32(250_000 + sent.gsr % 1000))
            E4GSR.encode(codes: &codes, counter: UInt16(truncatingIfNeeded: sent.gsr), into: &packet)
            let arrival = Self.start + Double(sent.gsr) * 6 / 4
            packet.withUnsafeBytes { streams.receive(.gsr, $0, arrival: arrival, into: &proxy) }
        }
        func sendTemperature() {
            sent.temp += 1
            let raw = InlineArray<8, UInt16>(repeating: E4Temperature.raw(celsius: 32.5))
            E4Temperature.encode(raw: raw, counter: UInt32(truncatingIfNeeded: sent.temp), into: &packet)
            let arrival = Self.start + Double(sent.temp) * 8 / 4
            packet.withUnsafeBytes { streams.receive(.temp, $0, arrival: arrival, into: &proxy) }
        }

        // Past the IBI engine's ≈ 20 s start-up: 60 s of BVP and ACC, uncounted.
        for _ in 0..<(60 * 64 / 11) {
            sendBVP()
            sendACC()
        }
        let before = sink.snapshot
        var pair = AllocationMeasurement.measure("device.receive.bvp+acc", iterations: iterations, warmUp: 0) {
            sendBVP()
            sendACC()
        }
        let during = sink.snapshot - before
        if during.samples != iterations || during.accelerations != iterations {
            pair.failure = "\(during.samples) BVP and \(during.accelerations) ACC batches for \(iterations) pairs"
        } else if during.intervals == 0 || during.heartRates == 0 {
            pair.failure = "no IBI or heart rate while counting: the IBI path was not exercised"
        }
        printError("device.receive.bvp+acc: \(during.intervals) IBIs, \(during.heartRates) HR values while counting")
        results.append(pair)
        results.append(.measure("device.receive.gsr", iterations: iterations) { sendGSR() })
        results.append(.measure("device.receive.temp", iterations: iterations) { sendTemperature() })
        var battery = E4PacketBytes()
        E4Battery.encode(percent: 77, into: &battery)
        results.append(.measure("device.receive.battery", iterations: iterations) {
            battery.withUnsafeBytes { streams.receive(.battery, $0, arrival: Self.start, into: &proxy) }
        })
        var tag = E4PacketBytes()
        E4Control.encodeTag(into: &tag)
        results.append(.measure("device.receive.tag", iterations: iterations) {
            tag.withUnsafeBytes { streams.receive(.tag, $0, arrival: Self.start, into: &proxy) }
        })
        // A packet that does not decode is counted and dropped (the `try?` path in `receive`).
        let bad = E4PacketBytes(repeatElement(0, count: 7))
        results.append(.measure("device.receive.malformed", iterations: iterations) {
            bad.withUnsafeBytes { streams.receive(.bvp, $0, arrival: Self.start, into: &proxy) }
        })
        return results
    }

    /// 64 BVP packets (one turn of the 6-bit counter, 11 s) of a 66 bpm pulse that repeats seamlessly: encoded over
    /// two turns, the second kept, so the first packet's deltas continue from the last packet's counts.
    ///
    /// - Parameter artefact: amplitude (counts) of a 2 Hz arm-swing artefact added to the pulse (22 cycles a turn).
    static func pulsePackets(artefact: Double = 0) -> [E4PacketBytes] {
        var encoder = E4BVPEncoder()
        var packets: [E4PacketBytes] = []
        let beatsPerTurn = 12.0  // 12 beats in 11 s: 65.5 bpm
        for index in 0..<128 {
            var green = InlineArray<11, Int>(repeating: 0)
            var red = InlineArray<11, Int>(repeating: 0)
            for sample in 0..<11 {
                let phase = Double((index * 11 + sample) % 704) / 704 * beatsPerTurn
                let beat = phase - phase.rounded(.down)
                // A sharp systolic upstroke and slow decay; counts fall at systole (the decoder inverts them).
                let shape = beat < 0.15 ? beat / 0.15 : (1 - beat) / 0.85
                let swing = artefact * sin(2 * Double.pi * Double((index * 11 + sample) % 704) / 704 * 22)
                green[sample] = 10_000 - Int(400 * shape) - Int(swing)
                red[sample] = 8_000 - Int(200 * shape)
            }
            var bytes = E4PacketBytes()
            encoder.encode(green: &green, red: &red, into: &bytes)
            if index >= 64 { packets.append(bytes) }
        }
        return packets
    }
}
