import E4
import Physio

/// Per-device decoding state: one decoder, one packet buffer and one clock per stream, and the IBI engine.
/// All storage is inline and reused; nothing here allocates per notification.
public struct DeviceStreams {
    var bvp = E4BVPDecoder()
    var acc = E4ACCDecoder()
    var gsr = E4GSRDecoder()
    var temperature = E4TemperatureDecoder()
    var battery = E4BatteryDecoder()
    var control = E4ControlDecoder()

    var bvpPacket = E4BVPPacket()
    var accPacket = E4ACCPacket()
    var gsrPacket = E4GSRPacket()
    var temperaturePacket = E4TemperaturePacket()
    /// The BVP packet's samples with the movement artefact subtracted (``IBIEngineOutput/filteredBVP``).
    var filteredBVP = InlineArray<11, Float>(repeating: 0)

    var bvpClock = StreamClock(fs: 64)
    var accClock = StreamClock(fs: 32)
    var gsrClock = StreamClock(fs: 4)
    var temperatureClock = StreamClock(fs: 4)

    var ibi = IBIEngine()
    /// The IBI engine's time line: BVP sample cadence, independent of the published timestamps' corrections. Jumps of
    /// the stamps up to half the BVP flow counter's period are taken for delivery delays: 64 packets (a 6-bit
    /// counter) of 11 samples at 64 Hz make 11 s.
    var beatTimeline = BeatTimeline(fs: 64, largestDelay: 0.5 * Double(64 * E4BVP.samplesPerPacket) / 64)

    public init() {}

    /// Called on every (re)connection: counters restart on the device, so decoders, clocks and the IBI
    /// warm-up start over. Statistics are kept for metrics.
    public mutating func reset() {
        self.bvp.reset()
        self.acc.reset()
        self.gsr.reset()
        self.temperature.reset()
        self.bvpClock.reset()
        self.accClock.reset()
        self.gsrClock.reset()
        self.temperatureClock.reset()
        self.ibi.reset()
        self.beatTimeline.reset()
    }

    /// Totals over every stream, for metrics.
    public var statistics: E4StreamStatistics {
        var total = E4StreamStatistics()
        for part in [self.bvp.statistics, self.acc.statistics, self.gsr.statistics, self.temperature.statistics,
                     self.battery.statistics, self.control.statistics] {
            total.packets &+= part.packets
            total.lostPackets &+= part.lostPackets
            total.duplicates &+= part.duplicates
            total.restarts &+= part.restarts
            total.decodeErrors &+= part.decodeErrors
        }
        return total
    }

    /// Clock re-anchors over every stream (SPEC §8), for metrics.
    public var reanchors: UInt64 {
        self.bvpClock.reanchors &+ self.accClock.reanchors &+ self.gsrClock.reanchors
            &+ self.temperatureClock.reanchors
    }
}

extension DeviceStreams {
    /// Decodes one notification that arrived at `arrival` (seconds since 1970) and hands the samples, with
    /// their timestamps (SPEC §8), and any IBI / heart rate to `sink`. A packet that does not decode is counted
    /// in ``statistics`` and dropped.
    public mutating func receive<Sink: DecodedStreamSink>(_ stream: E4Stream, _ bytes: UnsafeRawBufferPointer,
                                                         arrival: Double, into sink: inout Sink) {
        switch stream {
        case .bvp:
            guard let continuity = try? self.bvp.decode(bytes, into: &self.bvpPacket) else { return }
            let count = E4BVP.samplesPerPacket
            // Lost packets move the clock forward.
            let t0 = self.bvpClock.firstSampleTime(count: count, arrival: arrival,
                                                   lostPackets: continuity.lostPackets, restart: continuity.isRestart)
            // The engine measures intervals on the sample cadence (see ``BeatTimeline``) and reports in published
            // time; after lost packets or a restart it starts a new beat chain, so no interval spans missing data.
            let (e0, interrupted) = self.beatTimeline.firstSampleTime(
                published: t0, count: count, lostPackets: continuity.lostPackets, restart: continuity.isRestart)
            if interrupted { self.ibi.interrupt() }
            for index in 0..<count {
                let raw = self.bvpPacket.value[index]
                let output = self.ibi.appendBVP(Double(raw), at: e0 + Double(index) / 64)
                let filtered = output.filteredBVP.map { Float($0) } ?? raw
                self.filteredBVP[index] = filtered.isFinite ? filtered : raw
                if let interval = output.interval {
                    sink.ibi(Float(interval.seconds), at: interval.time + self.beatTimeline.offset(at: interval.time))
                }
                if let rate = output.heartRate {
                    sink.heartRate(Float(rate.beatsPerMinute), confidence: Float(rate.confidence), source: rate.source,
                                   at: rate.time + self.beatTimeline.offset(at: rate.time))
                }
            }
            // After the engine, which filters as it goes: the packet's IBI and HR come before its samples.
            let filtered = self.filteredBVP
            self.bvpPacket.value.span.withUnsafeBufferPointer { raw in
                filtered.span.withUnsafeBufferPointer { sink.bvp(raw: raw, filtered: $0, t0: t0, fs: 64) }
            }
        case .acc:
            guard let continuity = try? self.acc.decode(bytes, into: &self.accPacket) else { return }
            let count = E4ACC.samplesPerPacket
            let t0 = self.accClock.firstSampleTime(count: count, arrival: arrival,
                                                   lostPackets: continuity.lostPackets, restart: continuity.isRestart)
            let packet = self.accPacket
            packet.x.span.withUnsafeBufferPointer { x in
                packet.y.span.withUnsafeBufferPointer { y in
                    packet.z.span.withUnsafeBufferPointer { z in
                        sink.acceleration(x: x, y: y, z: z, t0: t0, fs: 32)
                    }
                }
            }
            // On the engine's time line: published ACC time, less the BVP time line's offset.
            let e0 = t0 - self.beatTimeline.offset
            for index in 0..<count {
                self.ibi.appendACC(x: Double(packet.x[index]), y: Double(packet.y[index]), z: Double(packet.z[index]),
                                   at: e0 + Double(index) / 32)
            }
        case .gsr:
            guard let continuity = try? self.gsr.decode(bytes, into: &self.gsrPacket) else { return }
            let t0 = self.gsrClock.firstSampleTime(count: E4GSR.samplesPerPacket, arrival: arrival,
                                                   lostPackets: continuity.lostPackets, restart: continuity.isRestart)
            self.gsrPacket.microsiemens.span.withUnsafeBufferPointer { sink.samples(.gsr, $0, t0: t0, fs: 4) }
        case .temp:
            guard let continuity = try? self.temperature.decode(bytes, into: &self.temperaturePacket) else { return }
            let t0 = self.temperatureClock.firstSampleTime(count: E4Temperature.samplesPerPacket, arrival: arrival,
                                                           lostPackets: continuity.lostPackets,
                                                           restart: continuity.isRestart)
            self.temperaturePacket.celsius.span.withUnsafeBufferPointer { sink.samples(.temp, $0, t0: t0, fs: 4) }
        case .battery:
            guard let reading = try? self.battery.decode(bytes) else { return }
            sink.battery(reading.level, at: arrival)
        case .tag:
            guard let event = try? self.control.decode(bytes), event == .tag else { return }
            sink.tag(at: arrival)
        }
    }
}

extension E4Continuity {
    var lostPackets: Int {
        if case .gap(let lost) = self { return lost }
        return 0
    }

    var isRestart: Bool {
        switch self {
        case .first, .restart: return true
        case .next, .gap: return false
        }
    }
}
