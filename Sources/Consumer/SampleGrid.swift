/// Places one sampled stream's samples on an E4 export's grid, where row `i` is the sample at `start + i / rate`
/// (SPEC §17.1). Pure.
///
/// The gap policy: the samples of the MQTT contract carry their own times, so the grid never drifts. A message
/// that continues where the last one ended (within half a sample period) is appended. A forward jump of at most
/// ``maximumFill`` samples (a few packets lost over the air: the agent's clock skips them) is filled by linear
/// interpolation between the samples on either side (ACC rounded to integers) and counted; each sample still lands
/// on its own row. Anything else — a longer jump, or a message that starts before the last one ended (the agent
/// re-anchored its clock) — cannot be placed without shifting samples, so it ends the session: ``Outcome/split``.
/// At a session's start, samples before `start` are dropped and a late first sample (within ``maximumFill``) is
/// preceded by copies of itself.
public struct SampleGrid: Sendable {
    public let start: Double
    public let rate: Double
    public let columns: Int
    public let maximumFill: Int
    /// Rows placed so far.
    public private(set) var rows = 0
    /// Rows made up by the policy (interpolated or copied).
    public private(set) var filled = 0
    /// Samples dropped because they fell before `start`.
    public private(set) var droppedBeforeStart = 0
    /// The grid position (in samples, fractional) the next sample is expected at; `nil` before the first.
    var expected: Double?
    var last: [Double] = []

    public init(start: Double, rate: Double, columns: Int, maximumFillSeconds: Double) {
        self.start = start
        self.rate = rate
        self.columns = columns
        self.maximumFill = Int((maximumFillSeconds * rate).rounded(.down))
    }

    public enum Outcome: Equatable, Sendable {
        /// Rows to write, row-major; `filled` of them (at the front) were made up.
        case rows([Double], filled: Int)
        /// The message cannot continue this grid.
        case split
        /// Every sample lies before `start`, or the first one too late to be placed.
        case dropped
    }

    /// Places `count` samples (`samples`, row-major) whose first is at time `time`.
    public mutating func place(time: Double, samples: [Double]) -> Outcome {
        let count = samples.count / self.columns
        guard count > 0 else { return .dropped }
        let position = (time - self.start) * self.rate
        guard let expected = self.expected else {
            // The first message: skip samples before the start, fill a short late start.
            var first = 0
            while first < count && position + Double(first) < -0.5 { first += 1 }
            guard first < count else {
                self.droppedBeforeStart += count
                return .dropped
            }
            let lead = Int((position + Double(first)).rounded())
            guard lead <= self.maximumFill else { return .dropped }
            self.droppedBeforeStart += first
            var out: [Double] = []
            out.reserveCapacity((lead + count - first) * self.columns)
            let head = Array(samples[(first * self.columns)..<((first + 1) * self.columns)])
            for _ in 0..<lead { out += head }
            out += samples[(first * self.columns)...]
            self.rows += lead + count - first
            self.filled += lead
            self.expected = position + Double(count)
            self.last = Array(samples.suffix(self.columns))
            return .rows(out, filled: lead)
        }
        let delta = position - expected
        if delta <= -0.5 { return .split }
        let missing = Int(delta.rounded())
        if missing > self.maximumFill { return .split }
        var out: [Double] = []
        out.reserveCapacity((missing + count) * self.columns)
        if missing > 0 {
            for step in 1...missing {
                let fraction = Double(step) / Double(missing + 1)
                for column in 0..<self.columns {
                    let a = self.last[column]
                    let b = samples[column]
                    let value = a + (b - a) * fraction
                    out.append(self.columns == 3 ? value.rounded() : value)
                }
            }
        }
        out += samples
        self.rows += missing + count
        self.filled += missing
        self.expected = position + Double(count)
        self.last = Array(samples.suffix(self.columns))
        return .rows(out, filled: missing)
    }

    /// The time of the sample after the last row, for splitting other streams at the same moment.
    public var endTime: Double { self.start + Double(self.rows) / self.rate }
}
