import E4
import Testing
import TestSupport

@testable import EmpaLink

@Suite struct BeatTimelineTests {
    @Test func keepsTheSampleCadenceWhenThePublishedAnchorMovesBack() {
        var clock = StreamClock(fs: 64)
        var timeline = BeatTimeline(fs: 64, breakingGap: 1)
        // The first packet was 150 ms late; the third arrives on time and moves the published anchor back.
        let arrivals = [11.0, 22.0, 33.0, 44.0].enumerated().map { 1000 + $1 / 64 + ($0 < 2 ? 0.150 : 0.002) }
        var engine: [Double] = []
        var published: [Double] = []
        for arrival in arrivals {
            let t0 = clock.firstSampleTime(count: 11, arrival: arrival)
            published.append(t0)
            engine.append(timeline.firstSampleTime(published: t0, count: 11, lostPackets: 0, discontinuous: false))
        }
        // Published stamps jump back by ≈ 148 ms; engine time goes on one packet at a time.
        #expect(published[2] - published[1] < 11.0 / 64 - 0.14)
        for k in 1..<engine.count {
            #expect(abs(engine[k] - engine[k - 1] - 11.0 / 64) < 1e-9)
        }
        // The offset maps engine time to the published stamps of the latest packet.
        #expect(abs(engine[3] + timeline.offset - published[3]) < 1e-9)
        #expect(abs(timeline.offset - (published[3] - engine[3])) < 1e-9)
    }

    @Test func skipsLostPacketsAndBreaksTheChainAtADiscontinuity() {
        var timeline = BeatTimeline(fs: 64, breakingGap: 1)
        let first = timeline.firstSampleTime(published: 500, count: 11, lostPackets: 0, discontinuous: false)
        // Two packets lost: their 22 samples are skipped over, as the clock does.
        let afterLoss = timeline.firstSampleTime(published: 500 + 33.0 / 64, count: 11, lostPackets: 2,
                                                 discontinuous: false)
        #expect(abs(afterLoss - first - 33.0 / 64) < 1e-9)
        // A restart stamped earlier than expected still moves engine time forward, by the breaking gap.
        let expected = afterLoss + 11.0 / 64
        let restarted = timeline.firstSampleTime(published: 400, count: 11, lostPackets: 0, discontinuous: true)
        #expect(abs(restarted - (expected + 1)) < 1e-9)
        #expect(abs(restarted + timeline.offset - 400) < 1e-9)
        // A re-anchor after a 5 s pause follows the published jump.
        let next = restarted + 11.0 / 64
        let paused = timeline.firstSampleTime(published: 400 + 11.0 / 64 + 5, count: 11, lostPackets: 0,
                                              discontinuous: true)
        #expect(abs(paused - (next + 5)) < 1e-9)
    }

    /// Collects what the live path hands on.
    final class Collector: DecodedStreamSink {
        var intervals: [(seconds: Double, time: Double)] = []
        var heartRates: [Double] = []

        func samples(_ stream: SampledStream, _ values: UnsafeBufferPointer<Float>, t0: Double, fs: Double) {}
        func acceleration(x: UnsafeBufferPointer<Int8>, y: UnsafeBufferPointer<Int8>, z: UnsafeBufferPointer<Int8>,
                          t0: Double, fs: Double) {}
        func ibi(_ seconds: Float, at time: Double) { self.intervals.append((Double(seconds), time)) }
        func heartRate(_ bpm: Float, at time: Double) { self.heartRates.append(Double(bpm)) }
        func battery(_ level: Float, at time: Double) {}
        func tag(at time: Double) {}
    }

    @Test func intervalsDoNotShrinkWhenALateAnchorIsCorrected() {
        // 60 s of a 75 bpm pulse whose interval alternates 0.78 / 0.82 s, sent as E4 BVP packets. Until 35 s every
        // packet arrives 150 ms after its last sample (a loaded board); after that, 2 ms: the published anchor moves
        // back by 148 ms in the middle of the stream.
        let pulse = SyntheticPulse(start: 1_700_000_000)
        let beats = pulse.beats(intervals: (0..<80).map { $0 % 2 == 0 ? 0.78 : 0.82 })
        let samples = pulse.samples(beats: beats, until: 60)
        var encoder = E4BVPEncoder()
        var streams = DeviceStreams()
        var sink = Collector()
        var packet = E4PacketBytes()
        for first in stride(from: 0, to: samples.count - 11, by: 11) {
            var green = InlineArray<11, Int>(repeating: 0)
            var red = InlineArray<11, Int>(repeating: 0)
            for i in 0..<11 {
                // Within the 7-bit steps the packets carry, so the encoder does not reshape the pulse.
                green[i] = -Int((samples[first + i].value * 2).rounded())
                red[i] = -Int(samples[first + i].value.rounded())
            }
            encoder.encode(green: &green, red: &red, into: &packet)
            let last = samples[first + 10].time
            let arrival = last + (last - pulse.start < 35 ? 0.150 : 0.002)
            packet.withUnsafeBytes { streams.receive(.bvp, $0, arrival: arrival, into: &sink) }
        }
        #expect(sink.intervals.count >= 40)
        // Every interval is a true one, to a sample at either end — the one spanning the correction too (on the
        // published stamps it would be 148 ms short).
        var lags: [(time: Double, lag: Double)] = []
        for ibi in sink.intervals {
            let end = beats.min { abs($0 - ibi.time) < abs($1 - ibi.time) } ?? .infinity
            let index = beats.firstIndex(of: end) ?? 0
            let truth = index > 0 ? end - beats[index - 1] : 0
            #expect(abs(ibi.seconds - truth) <= 3.0 / 64, "IBI \(ibi.seconds) vs \(truth) at \(ibi.time - pulse.start)")
            lags.append((ibi.time - pulse.start, ibi.time - end))
        }
        #expect(sink.intervals.contains { $0.time - pulse.start > 35 && $0.time - pulse.start < 37 })
        // Reported times are published times: they move back with the anchor, by the 148 ms the latency fell.
        let before = lags.filter { $0.time < 34 }.map(\.lag)
        let after = lags.filter { $0.time > 36 }.map(\.lag)
        let shift = after.reduce(0, +) / Double(max(after.count, 1)) - before.reduce(0, +) / Double(max(before.count, 1))
        #expect(abs(shift + 0.148) < 0.01, "shift \(shift)")
        #expect(sink.heartRates.allSatisfy { abs($0 - 75) < 3 })
    }
}
