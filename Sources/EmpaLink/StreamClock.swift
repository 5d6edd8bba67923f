/// Sample timestamps for one stream (SPEC §8).
///
/// The first packet anchors `t0` at its arrival time minus its duration; later samples are `t0 + n / fs`, with the
/// samples of lost packets (counter gaps) skipped over. When the anchor drifts from arrival time by more than
/// ``maximumDrift`` it is re-anchored, and the event counted. Pure arithmetic: no allocation, no clock reads.
///
/// Arrival is always a little after the last sample was taken (radio, BlueZ and scheduling latency), so a packet
/// that arrives earlier than the anchor predicts proves the anchor too late: the anchor moves back to it. The
/// first packet's latency (tens of milliseconds on a loaded board) therefore does not stay in every timestamp.
public struct StreamClock: Sendable, Equatable {
    public static let maximumDrift = 0.5

    public let fs: Double
    public private(set) var t0: Double?
    /// Samples from the anchor to the next expected sample.
    public private(set) var index: Int64 = 0
    public private(set) var reanchors: UInt64 = 0

    public init(fs: Double) {
        self.fs = fs
    }

    public mutating func reset() {
        self.t0 = nil
        self.index = 0
    }

    /// The time of the first sample of a packet of `count` samples that arrived at `arrival`.
    ///
    /// - Parameters:
    ///   - lostPackets: packets missing before this one (their samples are skipped over).
    ///   - restart: the device restarted its counter: anchor anew.
    public mutating func firstSampleTime(count: Int, arrival: Double, lostPackets: Int = 0,
                                         restart: Bool = false) -> Double {
        let duration = Double(count) / self.fs
        guard let anchor = self.t0, !restart else {
            self.t0 = arrival - duration
            self.index = Int64(count)
            return arrival - duration
        }
        self.index &+= Int64(lostPackets) &* Int64(count)
        var first = anchor + Double(self.index) / self.fs
        let drift = arrival - (first + duration)
        if drift < 0 && drift >= -StreamClock.maximumDrift {
            self.t0 = anchor + drift
            first += drift
        } else if abs(drift) > StreamClock.maximumDrift {
            self.t0 = arrival - duration - Double(self.index) / self.fs
            self.reanchors &+= 1
            first = arrival - duration
        }
        self.index &+= Int64(count)
        return first
    }
}
