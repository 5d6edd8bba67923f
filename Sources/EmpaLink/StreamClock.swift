/// Sample timestamps for one stream (SPEC §8).
///
/// The first packet anchors `t0` at its arrival time minus its duration; later samples are `t0 + n / fs`, with the
/// samples of lost packets (counter gaps) skipped over. When the anchor drifts from arrival time by more than
/// ``maximumDrift`` it is re-anchored, and the event counted. Pure arithmetic: no allocation, no clock reads.
///
/// Arrival is always a little after the last sample was taken (radio, BlueZ and scheduling latency), so a packet
/// that arrives earlier than the anchor predicts proves the anchor too late: the anchor moves back to it. The
/// first packet's latency (tens of milliseconds on a loaded board) therefore does not stay in every timestamp.
///
/// A packet that arrives *late* proves nothing by itself: after a stall the radio (or BlueZ) delivers the packets it
/// held back in a burst, each late by less than the one before, until they are on time again. Re-anchoring forward
/// on the first of them stamped the burst ahead of itself, and then walked back packet by packet over samples
/// already stamped: the published times overlapped and a consumer's session split there. So the clock moves forward
/// only when packets have arrived more than ``maximumDrift`` late for ``lateConfirmation`` of arrival time (a
/// device that paused without a counter gap, or a clock that runs slow), and then by the least lateness seen in that
/// time; a burst that catches up sooner keeps the anchor, and every timestamp follows the one before it.
public struct StreamClock: Sendable, Equatable {
    public static let maximumDrift = 0.5
    /// How long packets must keep arriving late by more than ``maximumDrift`` before the anchor moves forward.
    public static let lateConfirmation = 1.0

    public let fs: Double
    public private(set) var t0: Double?
    /// Samples from the anchor to the next expected sample.
    public private(set) var index: Int64 = 0
    public private(set) var reanchors: UInt64 = 0
    /// The arrival of the first packet of the current run of late ones, and the least lateness in the run.
    var lateSince: Double?
    var leastLateness = 0.0

    public init(fs: Double) {
        self.fs = fs
    }

    public mutating func reset() {
        self.t0 = nil
        self.index = 0
        self.lateSince = nil
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
            self.lateSince = nil
            return arrival - duration
        }
        self.index &+= Int64(lostPackets) &* Int64(count)
        var first = anchor + Double(self.index) / self.fs
        let drift = arrival - (first + duration)
        if drift > StreamClock.maximumDrift {
            if let since = self.lateSince {
                self.leastLateness = min(self.leastLateness, drift)
                if arrival - since >= StreamClock.lateConfirmation {
                    self.t0 = anchor + self.leastLateness
                    first += self.leastLateness
                    self.reanchors &+= 1
                    self.lateSince = nil
                }
            } else {
                self.lateSince = arrival
                self.leastLateness = drift
            }
        } else {
            self.lateSince = nil
            if drift < -StreamClock.maximumDrift {
                // Earlier than the anchor allows by more than any latency could explain: the device's clock restarted
                // without saying so; anchor anew.
                self.t0 = arrival - duration - Double(self.index) / self.fs
                self.reanchors &+= 1
                first = arrival - duration
            } else if drift < 0 {
                self.t0 = anchor + drift
                first += drift
            }
        }
        self.index &+= Int64(count)
        return first
    }
}
