/// The spool's settings, its own values (SPEC §15: the spool knows nothing of the agent's configuration schema;
/// the agent translates its `[spool]` table, SPEC §4, into these), plus sizes that are not operator-facing.
///
/// There is no mode here: the spool behaves the same in `offline` and `always` mode; the mode tells the agent
/// when to append (Docs/spool.md).
public struct SpoolOptions: Sendable, Equatable {
    /// What an append does when ``maxBytes`` would be exceeded.
    public enum FullPolicy: Sendable, Equatable, CaseIterable {
        /// Delete whole oldest segments until the new record fits; their unacknowledged records are counted.
        case dropOldest
        /// Refuse the new record (counted).
        case dropNewest
    }

    /// The directory (the agent's `spool.dir`); created with mode 0700 when missing.
    public var directory: String
    /// The most bytes of framed records kept on disk.
    public var maxBytes: Int
    /// A new segment file starts when the current one would grow past this.
    public var segmentBytes: Int
    /// The group-commit interval in milliseconds; 0 syncs after every batch the writer drains.
    public var fsyncIntervalMilliseconds: Int
    public var onFull: FullPolicy
    /// The most records ``Spool/nextForReplay(limit:now:)`` hands out per second.
    public var replayRate: Int
    /// The bytes of the ring between the event loop and the writer thread: how long a disk stall the loop rides
    /// out before it must drop (4 MiB ≈ 2 s at 100 000 records/s of 20 bytes… more at real rates).
    public var ringBytes: Int

    public init(
        directory: String,
        maxBytes: Int = 256 << 20,
        segmentBytes: Int = 4 << 20,
        fsyncIntervalMilliseconds: Int = 1000,
        onFull: FullPolicy = .dropOldest,
        replayRate: Int = 1000,
        ringBytes: Int = 4 << 20
    ) {
        self.directory = directory
        self.maxBytes = maxBytes
        self.segmentBytes = segmentBytes
        self.fsyncIntervalMilliseconds = fsyncIntervalMilliseconds
        self.onFull = onFull
        self.replayRate = replayRate
        self.ringBytes = ringBytes
    }
}
