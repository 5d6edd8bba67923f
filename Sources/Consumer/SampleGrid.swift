/// Places one sampled stream's samples on an E4 export's grid, where row `i` is the sample at `start + i / rate`
/// (SPEC §17.1). Pure.
///
/// The gap policy: the samples of the MQTT contract carry their own times, so the grid never drifts. A message
/// whose first sample's row is the next row is appended. A forward jump of at most
/// ``maximumFill`` samples (a few packets lost over the air: the agent's clock skips them) is filled by linear
/// interpolation between the samples on either side (ACC rounded to integers) and counted; each sample still lands
/// on its own row. A step back of less than a sample, whose first sample's nearest row is placed already, drops that
/// sample (``droppedOverlapping``). Anything else — a longer jump, or a message that starts a sample or more before
/// the last one ended (the agent re-anchored its clock) — cannot be placed without shifting samples, so it ends the
/// session: ``Outcome/split``.
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
    /// Samples dropped because the clock stepped back by less than a sample and their row was placed already.
    public private(set) var droppedOverlapping = 0
    /// How far beyond half a period a sample may lie from its row while the stream's phase is kept, in samples: the
    /// last bits of a time halfway between two rows.
    public static let halfwayAllowance = 0.05
    var last: [Double] = []
    /// The first sample's offset from its row, in samples (-0.5…0.5).
    var phase = 0.0

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

    /// The runs of rows made up by the policy: (first row, count), at most ``fillRunLimit`` of them kept.
    public private(set) var fills: [(row: Int, count: Int)] = []
    public static let fillRunLimit = 10_000

    /// Places `count` samples (`samples`, row-major) whose first is at time `time`.
    ///
    /// A sample's row is its time's nearest grid index, `round((t - start) * rate)`, computed for each message
    /// from its own time (the agent's times are `t0 + n / fs`, so consecutive messages stay on one grid).
    public mutating func place(time: Double, samples: [Double]) -> Outcome {
        let count = samples.count / self.columns
        guard count > 0 else { return .dropped }
        let position = (time - self.start) * self.rate
        var first = 0
        if self.rows == 0 {
            // The first message: skip samples before the start.
            while first < count && (position + Double(first)).rounded() < 0 { first += 1 }
            guard first < count else {
                self.droppedBeforeStart += count
                return .dropped
            }
        }
        // A stream's offset against the grid (its phase) is set by its first sample and kept while messages agree
        // with it, so a sample halfway between two rows never flips between them with the last bit of its time. A
        // message that disagrees (the edge re-anchored the stream's clock) sets a new phase: every sample stays on
        // the row nearest its own time.
        let exact = position + Double(first)
        var phase = self.phase
        var row = Int((exact - phase).rounded())
        // How far, in samples, this message's first sample lies from where the last message's rows continue.
        let step = exact - (Double(self.rows) + self.phase)
        // The phase is kept only while it holds the sample within half a period of its row (and ``halfwayAllowance``
        // for the last bits of a time halfway between two rows): a clock stepped back by a fraction of a sample must
        // not leave the stream a row late.
        if self.rows == 0 || abs(exact - phase - Double(row)) > 0.25
            || abs(exact - Double(row)) > 0.5 + Self.halfwayAllowance {
            phase = exact - exact.rounded()
            row = Int(exact.rounded())
        }
        var missing = row - self.rows
        if missing == -1 && self.rows > 0 && step > -1 {
            // The clock stepped back by less than a sample: the first sample's row holds the previous message's last
            // sample. It is dropped (counted), not shifted; the rest keep their own rows.
            self.droppedOverlapping += 1
            first += 1
            row += 1
            missing = 0
            guard first < count else {
                self.phase = phase
                return .rows([], filled: 0)
            }
        }
        if missing < 0 { return .split }
        if missing > self.maximumFill { return self.rows == 0 ? .dropped : .split }
        if self.rows == 0 { self.droppedBeforeStart += first }
        self.phase = phase
        var out: [Double] = []
        out.reserveCapacity((missing + count - first) * self.columns)
        let head = Array(samples[(first * self.columns)..<((first + 1) * self.columns)])
        if missing > 0 {
            for step in 1...missing {
                if self.last.isEmpty {
                    out += head  // a late start: copies of the first sample
                    continue
                }
                let fraction = Double(step) / Double(missing + 1)
                for column in 0..<self.columns {
                    let a = self.last[column]
                    let value = a + (head[column] - a) * fraction
                    out.append(self.columns == 3 ? value.rounded() : value)
                }
            }
            if self.fills.count < Self.fillRunLimit { self.fills.append((self.rows, missing)) }
        }
        out += samples[(first * self.columns)...]
        self.rows += missing + count - first
        self.filled += missing
        self.last = Array(samples.suffix(self.columns))
        return .rows(out, filled: missing)
    }

    /// The time of the sample after the last row, for splitting other streams at the same moment.
    public var endTime: Double { self.start + Double(self.rows) / self.rate }
}
