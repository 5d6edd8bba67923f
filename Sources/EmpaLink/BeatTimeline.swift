/// The IBI engine's time line for one wristband: BVP samples exactly one sample period apart, as the wristband took
/// them, with lost packets skipped over — so the interval between two beats does not depend on radio latency.
///
/// Published timestamps (``StreamClock``, SPEC §8) follow arrival: when a packet arrives earlier than the anchor
/// predicts, the anchor moves back to it, and every later sample is stamped that much earlier. An interval measured
/// on those stamps across the move would shrink by it (on a loaded board the first packet's latency is tens of
/// milliseconds, up to a hundred and more), and the engine would drop the samples that seem to go back in time. On
/// this time line the move changes only ``offset``, from engine time to published time, which the engine's output is
/// shifted by. A discontinuity the clock cannot bridge — the wristband restarted its counters, or the anchor was
/// re-anchored after drifting more than half a second — is a jump forward of at least ``breakingGap``, which the
/// engine takes for a gap: no interval spans it. Pure arithmetic: no allocation.
struct BeatTimeline: Sendable, Equatable {
    /// Sample rate in Hz.
    let fs: Double
    /// A forward jump this long breaks the engine's beat chain (longer than its largest gap, 0.5 s).
    let breakingGap: Double
    /// Published time minus engine time, for what the engine reports.
    private(set) var offset: Double = 0
    /// Engine time of the next sample expected; `nil` before the first packet.
    private var next: Double?

    init(fs: Double, breakingGap: Double) {
        self.fs = fs
        self.breakingGap = breakingGap
    }

    mutating func reset() {
        self.offset = 0
        self.next = nil
    }

    /// The engine time of the first sample of a packet of `count` samples stamped `published` by the stream's clock.
    ///
    /// - Parameters:
    ///   - lostPackets: packets missing before this one (their samples are skipped over, as the clock does).
    ///   - discontinuous: the clock restarted or re-anchored for this packet.
    mutating func firstSampleTime(published: Double, count: Int, lostPackets: Int, discontinuous: Bool) -> Double {
        let first: Double
        if let next = self.next {
            let expected = next + Double(lostPackets * count) / self.fs
            // On a discontinuity follow the published jump forward, but always by enough to break the chain.
            first = discontinuous ? expected + max(published - self.offset - expected, self.breakingGap) : expected
        } else {
            first = published
        }
        self.offset = published - first
        self.next = first + Double(count) / self.fs
        return first
    }
}
