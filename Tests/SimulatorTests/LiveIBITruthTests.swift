import E4
import EmpaLink
import Testing

@testable import Simulator

/// The agent contract's live IBI check (`test_ibi_and_hr_follow_the_true_beats`) without the scheduling: which
/// sample a session starts on depends on when the agent connected, and that decides where the decoder's baseline
/// and the engine's warm-up begin. Here the simulator's own physiology (the contract's seed and wristbands, motion
/// episodes included) goes through the live path (``DeviceStreams``) from many start times, and every interval it
/// emits must be the true one, as the contract demands: within 0.1 s, 0.04 s on average.
@Suite struct LiveIBITruthTests {
    final class Intervals: DecodedStreamSink {
        var values: [(seconds: Double, time: Double)] = []

        func samples(_ stream: SampledStream, _ values: UnsafeBufferPointer<Float>, t0: Double, fs: Double) {}
        func acceleration(x: UnsafeBufferPointer<Int8>, y: UnsafeBufferPointer<Int8>, z: UnsafeBufferPointer<Int8>,
                          t0: Double, fs: Double) {}
        func ibi(_ seconds: Float, at time: Double) { self.values.append((Double(seconds), time)) }
        func heartRate(_ bpm: Float, at time: Double) {}
        func battery(_ level: Float, at time: Double) {}
        func tag(at time: Double) {}
    }

    /// Streams `seconds` of wristband `device` (seed 7, as the contract's rig) from simulator time `start`, BVP and ACC
    /// interleaved as they fall due, each packet arriving 40 ms after its last sample; returns what was emitted and
    /// the true beats (foot, interval ending there).
    func run(device: Int, start: Double, seconds: Double) -> (Intervals, [(foot: Double, ibi: Double?)]) {
        var model = PhysiologyModel(seed: 7, device: device, parameters: PhysiologyParameters())
        var streams = DeviceStreams()
        var sink = Intervals()
        var session = StreamSession(number: 1, start: start)
        var accCounter: UInt16 = 0
        _ = model.drainBeats()
        var truth: [(foot: Double, ibi: Double?)] = []
        var packet = E4PacketBytes()
        while Double(session.bvpNext) / 64 < start + seconds {
            let bvpDue = Double(session.bvpNext + E4BVP.samplesPerPacket) / 64
            let accDue = Double(session.accNext + E4ACC.samplesPerPacket) / 32
            if bvpDue <= accDue {
                var green = InlineArray<11, Int>(repeating: 0)
                var red = InlineArray<11, Int>(repeating: 0)
                for i in 0..<E4BVP.samplesPerPacket {
                    let counts = model.bvp(index: session.bvpNext + i)
                    let origin = session.bvpOrigin ?? counts
                    session.bvpOrigin = origin
                    green[i] = Int((counts.green - origin.green).rounded())
                    red[i] = Int((counts.red - origin.red).rounded())
                }
                session.bvpEncoder.encode(green: &green, red: &red, into: &packet)
                packet.withUnsafeBytes { streams.receive(.bvp, $0, arrival: 1e9 + bvpDue + 0.04, into: &sink) }
                session.bvpNext += E4BVP.samplesPerPacket
            } else {
                var x = InlineArray<6, Int8>(repeating: 0)
                var y = InlineArray<6, Int8>(repeating: 0)
                var z = InlineArray<6, Int8>(repeating: 0)
                for i in 0..<E4ACC.samplesPerPacket {
                    (x[i], y[i], z[i]) = model.acc(index: session.accNext + i)
                }
                E4ACC.encode(x: x, y: y, z: z, counter: accCounter, into: &packet)
                accCounter &+= 1
                packet.withUnsafeBytes { streams.receive(.acc, $0, arrival: 1e9 + accDue + 0.04, into: &sink) }
                session.accNext += E4ACC.samplesPerPacket
            }
            for beat in model.drainBeats() where beat.foot >= start {
                truth.append((1e9 + beat.foot, beat.precedingInterval))
            }
        }
        return (sink, truth)
    }

    @Test(arguments: [1, 2])
    func everyEmittedIntervalIsTrueWhateverTheStart(device: Int) throws {
        for step in 0..<40 {
            let start = 0.5 + 0.37 * Double(step)
            let (sink, truth) = self.run(device: device, start: start, seconds: 40)
            var errors: [Double] = []
            for interval in sink.values {
                let beat = try #require(truth.min { abs($0.foot - interval.time) < abs($1.foot - interval.time) })
                let ibi = beat.ibi ?? 0
                // 40 ms of latency: the published stamps are that much late.
                let lag = interval.time - 0.04 - beat.foot
                #expect(abs(lag) <= 0.1, "start \(start): IBI at \(interval.time - 1e9) is \(lag) s from a true foot")
                #expect(abs(interval.seconds - ibi) <= 0.1,
                        "start \(start): IBI \(interval.seconds) vs true \(ibi) at \(interval.time - 1e9)")
                errors.append(abs(interval.seconds - ibi))
            }
            #expect(errors.count >= 3, "start \(start): \(errors.count) IBIs")
            #expect(errors.reduce(0, +) / Double(max(errors.count, 1)) <= 0.04, "start \(start): errors \(errors)")
        }
    }
}
