import E4
import Testing
import TestSupport

@testable import EmpaLink

@Suite struct BeatTimelineTests {
    @Test func keepsTheSampleCadenceWhenThePublishedAnchorMovesBack() {
        var clock = StreamClock(fs: 64)
        var timeline = BeatTimeline(fs: 64, largestDelay: 5.5)
        // The first packet was 150 ms late; the third arrives on time and moves the published anchor back.
        let arrivals = [11.0, 22.0, 33.0, 44.0].enumerated().map { 1000 + $1 / 64 + ($0 < 2 ? 0.150 : 0.002) }
        var engine: [Double] = []
        var published: [Double] = []
        for arrival in arrivals {
            let t0 = clock.firstSampleTime(count: 11, arrival: arrival)
            published.append(t0)
            let (time, interrupted) = timeline.firstSampleTime(published: t0, count: 11, lostPackets: 0, restart: false)
            #expect(!interrupted)
            engine.append(time)
        }
        // Published stamps jump back by ≈ 148 ms; engine time goes on one packet at a time.
        #expect(published[2] - published[1] < 11.0 / 64 - 0.14)
        for k in 1..<engine.count {
            #expect(abs(engine[k] - engine[k - 1] - 11.0 / 64) < 1e-9)
        }
        // The offset maps engine time to the published stamps of the latest packet.
        #expect(abs(engine[3] + timeline.offset - published[3]) < 1e-9)
    }

    @Test func aStallWithTheCounterIntactIsADelayNotAnInterruption() {
        var timeline = BeatTimeline(fs: 64, largestDelay: 5.5)
        let first = timeline.firstSampleTime(published: 500, count: 11, lostPackets: 0, restart: false).time
        // The radio stalled 1.3 s and delivered every packet late: the clock re-anchored, the samples are contiguous.
        let late = timeline.firstSampleTime(published: 500 + 11.0 / 64 + 1.3, count: 11, lostPackets: 0, restart: false)
        #expect(!late.interrupted)
        #expect(abs(late.time - first - 11.0 / 64) < 1e-9)
        #expect(abs(timeline.offset - 1.3) < 1e-9)
        // Beyond half the counter's period a delay cannot be told from a lost period: interrupted, and followed.
        let next = late.time + 11.0 / 64
        let far = timeline.firstSampleTime(published: next + 1.3 + 6, count: 11, lostPackets: 0, restart: false)
        #expect(far.interrupted)
        #expect(abs(far.time - (next + 6)) < 1e-9)
        #expect(abs(timeline.offset - 1.3) < 1e-9)
    }

    @Test func lostPacketsAndRestartsInterruptWithoutGoingBack() {
        var timeline = BeatTimeline(fs: 64, largestDelay: 5.5)
        let first = timeline.firstSampleTime(published: 500, count: 11, lostPackets: 0, restart: false).time
        // Two packets lost: their 22 samples are skipped over, as the clock does, and the chain must break.
        let afterLoss = timeline.firstSampleTime(published: 500 + 33.0 / 64, count: 11, lostPackets: 2, restart: false)
        #expect(afterLoss.interrupted)
        #expect(abs(afterLoss.time - first - 33.0 / 64) < 1e-9)
        // A restart stamped earlier than expected does not take engine time back.
        let expected = afterLoss.time + 11.0 / 64
        let restarted = timeline.firstSampleTime(published: 400, count: 11, lostPackets: 0, restart: true)
        #expect(restarted.interrupted)
        #expect(abs(restarted.time - expected) < 1e-9)
        #expect(abs(restarted.time + timeline.offset - 400) < 1e-9)
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

    /// 60 s of a 75 bpm pulse whose interval alternates 0.78 / 0.82 s, sent as E4 BVP packets through
    /// ``DeviceStreams``; `arrival` gives each packet's arrival from its last sample's time, `nil` to lose it.
    func liveIntervals(_ pulse: SyntheticPulse, beats: [Double],
                       arrival: (_ packet: Int, _ last: Double) -> Double?) -> Collector {
        let samples = pulse.samples(beats: beats, until: 60)
        var encoder = E4BVPEncoder()
        var streams = DeviceStreams()
        var sink = Collector()
        var packet = E4PacketBytes()
        for (number, first) in stride(from: 0, to: samples.count - 11, by: 11).enumerated() {
            var green = InlineArray<11, Int>(repeating: 0)
            var red = InlineArray<11, Int>(repeating: 0)
            for i in 0..<11 {
                // Within the 7-bit steps the packets carry, so the encoder does not reshape the pulse.
                green[i] = -Int((samples[first + i].value * 2).rounded())
                red[i] = -Int(samples[first + i].value.rounded())
            }
            encoder.encode(green: &green, red: &red, into: &packet)
            guard let time = arrival(number, samples[first + 10].time) else { continue }
            packet.withUnsafeBytes { streams.receive(.bvp, $0, arrival: time, into: &sink) }
        }
        return sink
    }

    /// Every emitted interval is a true one, to a sample at either end; returns each one's lag from its true foot.
    func expectTrue(_ intervals: [(seconds: Double, time: Double)], beats: [Double], start: Double,
                    sourceLocation: SourceLocation = #_sourceLocation) -> [(time: Double, lag: Double)] {
        var lags: [(time: Double, lag: Double)] = []
        for ibi in intervals {
            let end = beats.min { abs($0 - ibi.time) < abs($1 - ibi.time) } ?? .infinity
            let index = beats.firstIndex(of: end) ?? 0
            let truth = index > 0 ? end - beats[index - 1] : 0
            #expect(abs(ibi.seconds - truth) <= 3.0 / 64, "IBI \(ibi.seconds) vs \(truth) at \(ibi.time - start)",
                    sourceLocation: sourceLocation)
            lags.append((ibi.time - start, ibi.time - end))
        }
        return lags
    }

    var beats: (SyntheticPulse, [Double]) {
        let pulse = SyntheticPulse(start: 1_700_000_000)
        return (pulse, pulse.beats(intervals: (0..<80).map { $0 % 2 == 0 ? 0.78 : 0.82 }))
    }

    @Test func intervalsDoNotShrinkWhenALateAnchorIsCorrected() {
        // Until 35 s every packet arrives 150 ms after its last sample (a loaded board); after that, 2 ms: the
        // published anchor moves back by 148 ms in the middle of the stream.
        let (pulse, beats) = self.beats
        let sink = self.liveIntervals(pulse, beats: beats) { _, last in
            last + (last - pulse.start < 35 ? 0.150 : 0.002)
        }
        #expect(sink.intervals.count >= 40)
        // The interval spanning the correction is true too (on the published stamps it would be 148 ms short).
        let lags = self.expectTrue(sink.intervals, beats: beats, start: pulse.start)
        #expect(sink.intervals.contains { $0.time - pulse.start > 35 && $0.time - pulse.start < 37 })
        // Reported times are published times: they move back with the anchor, by the 148 ms the latency fell.
        let before = lags.filter { $0.time < 34 }.map(\.lag)
        let after = lags.filter { $0.time > 36 }.map(\.lag)
        let shift = after.reduce(0, +) / Double(max(after.count, 1)) - before.reduce(0, +) / Double(max(before.count, 1))
        #expect(abs(shift + 0.148) < 0.01, "shift \(shift)")
        #expect(sink.heartRates.allSatisfy { abs($0 - 75) < 3 })
    }

    @Test func noIntervalSpansALostPacket() {
        // One packet in 80 lost (one every 14 s): its samples are missing, and the delta-coded signal steps by what
        // the packet's deltas held, which the decoder's 2 s baseline drains. No interval spans the loss, and none is
        // emitted until the step has drained (the engine's 6 s settling).
        let (pulse, beats) = self.beats
        let sink = self.liveIntervals(pulse, beats: beats) { number, last in
            number % 80 == 79 ? nil : last + 0.02
        }
        let lags = self.expectTrue(sink.intervals, beats: beats, start: pulse.start)
        #expect(lags.count >= 20)
        // No interval reaches into a lost packet or the 6 s after it (losses end at 13.8, 27.5, 41.3, 55.0 s).
        let losses = [79.0, 159, 239, 319].map { ($0 + 1) * 11 / 64 }
        for ibi in sink.intervals {
            let end = ibi.time - pulse.start
            let begin = end - ibi.seconds
            #expect(!losses.contains { end > $0 - 11.0 / 64 && begin < $0 + 6 }, "IBI \(begin)–\(end) s")
        }
    }

    @Test func aStallWithEveryPacketDeliveredKeepsTheChain() {
        // From 39.6 s the radio stalls until 42 s and then delivers every packet at once: the clock re-anchors 2.4 s
        // late and walks back packet by packet; nothing is lost.
        let (pulse, beats) = self.beats
        let sink = self.liveIntervals(pulse, beats: beats) { _, last in
            let t = last - pulse.start
            return t >= 39.6 && t < 42 ? pulse.start + 42.02 : last + 0.02
        }
        let lags = self.expectTrue(sink.intervals, beats: beats, start: pulse.start)
        // Intervals go on through the stall (the engine's time line is the sample cadence).
        #expect(lags.contains { $0.time > 40 && $0.time < 42.5 })
        #expect(lags.count >= 45)
        // A beat sampled before the stall keeps its packet's stamp even when it comes out after the re-anchor (the
        // beat at 39.48 s is judged in a late packet).
        let reference = lags.filter { $0.time < 38 }.map(\.lag)
        let usual = reference.reduce(0, +) / Double(max(reference.count, 1))
        for entry in lags where entry.time - entry.lag < 39.6 {
            #expect(abs(entry.lag - usual) <= 2.0 / 64, "beat at \(entry.time - entry.lag) s stamped \(entry.lag) s off")
        }
        #expect(lags.contains { abs($0.time - $0.lag - 39.48) < 0.05 })
    }
}
