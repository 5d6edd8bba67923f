/// The IBI engine's time line for one wristband: BVP samples exactly one sample period apart, as the wristband took
/// them — so the interval between two beats does not depend on radio latency — and which packets interrupt the stream.
///
/// Published timestamps (``StreamClock``, SPEC §8) follow arrival: when a packet arrives earlier than the anchor
/// predicts, the anchor moves back to it and every later sample is stamped that much earlier; after a stall of more
/// than half a second the clock re-anchors. An interval measured on those stamps across such a move would be off by
/// it, and the engine would drop the samples that seem to go back in time. On this time line a move changes only the
/// offset from engine time to published time, by which the engine's output is shifted: the offset of the packet the
/// output was sampled in (``offset(at:)``), since a beat comes out up to about 1.3 s after its foot and a stall moves
/// the offset by its length.
///
/// The stream is *interrupted* (the engine must start a new beat chain, ``Physio/IBIEngine/interrupt()``) when the
/// wristband restarted its counters, when packets were lost — BVP is delta-coded, so a lost packet leaves a step in
/// the signal besides the missing samples — or when the stamps jumped further than a delivery delay can explain: half
/// the flow counter's period (E4: 64 packets, 11 s), beyond which a delay and a loss of a whole counter period look
/// alike. A stall with the counter intact is a delivery delay: the samples are contiguous and the chain goes on. Pure
/// arithmetic: no allocation.
struct BeatTimeline: Sendable {
    /// Sample rate in Hz.
    let fs: Double
    /// The largest jump of the published stamps, in seconds, taken for a delivery delay with the counter intact.
    let largestDelay: Double
    /// Published time minus engine time for the latest packet.
    private(set) var offset: Double = 0
    /// Engine time of the next sample expected; `nil` before the first packet.
    private var next: Double?
    /// The last packets' first-sample engine times (`x`) and offsets (`y`), newest at ``newest``: 16 packets of 11
    /// samples reach 2.75 s back, past the engine's latest output (1 s budget plus the pulse's judgement).
    private var history = InlineArray<16, SIMD2<Double>>(repeating: SIMD2(-Double.infinity, 0))
    private var newest = 0

    init(fs: Double, largestDelay: Double) {
        self.fs = fs
        self.largestDelay = largestDelay
    }

    mutating func reset() {
        self.offset = 0
        self.next = nil
        self.history = InlineArray(repeating: SIMD2(-Double.infinity, 0))
        self.newest = 0
    }

    /// Published time minus engine time for the packet that holds engine time `time` (the oldest one kept for a time
    /// before them all).
    func offset(at time: Double) -> Double {
        var index = self.newest
        for _ in 0..<self.history.count {
            let entry = self.history[index]
            if entry.x <= time { return entry.y }
            index = index == 0 ? self.history.count - 1 : index - 1
        }
        return self.history[(self.newest + 1) % self.history.count].y
    }

    private mutating func record(first: Double, offset: Double) {
        self.offset = offset
        self.newest = (self.newest + 1) % self.history.count
        self.history[self.newest] = SIMD2(first, offset)
    }

    /// The engine time of the first sample of a packet of `count` samples stamped `published` by the stream's clock,
    /// and whether the stream was interrupted before it.
    ///
    /// - Parameters:
    ///   - lostPackets: packets missing before this one (their samples are skipped over, as the clock does).
    ///   - restart: the wristband restarted its counters.
    mutating func firstSampleTime(published: Double, count: Int, lostPackets: Int,
                                  restart: Bool) -> (time: Double, interrupted: Bool) {
        guard let next = self.next else {
            self.record(first: published, offset: 0)
            self.next = published + Double(count) / self.fs
            return (published, false)
        }
        let expected = next + Double(lostPackets * count) / self.fs
        let jump = published - self.offset - expected
        let interrupted = restart || lostPackets > 0 || abs(jump) > self.largestDelay
        // Across an interruption engine time follows a jump forward, so the output keeps its offset; it never goes
        // back. Otherwise the cadence holds and the offset takes up the move.
        let first = interrupted ? expected + max(jump, 0) : expected
        self.record(first: first, offset: published - first)
        self.next = first + Double(count) / self.fs
        return (first, interrupted)
    }
}
