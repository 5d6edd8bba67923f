import Config

/// The spool's settings: the `[spool]` table of the configuration (SPEC §4) plus sizes that are not
/// operator-facing.
public struct SpoolOptions: Sendable, Equatable {
    public typealias Mode = AgentConfiguration.SpoolMode
    public typealias FullPolicy = AgentConfiguration.SpoolFullPolicy

    /// `spool.dir`; created with mode 0700 when missing.
    public var directory: String
    /// `spool.mode`. The spool itself behaves the same in both modes; the mode tells the agent when to append
    /// (see Docs/spool.md) and is kept here so that one value travels.
    public var mode: Mode
    /// `spool.max_bytes`: the most bytes of framed records kept on disk.
    public var maxBytes: Int
    /// `spool.segment_bytes`: a new segment file starts when the current one would grow past this.
    public var segmentBytes: Int
    /// `spool.fsync_interval_ms`: the group-commit interval; 0 syncs after every batch the writer drains.
    public var fsyncIntervalMilliseconds: Int
    /// `spool.on_full`.
    public var onFull: FullPolicy
    /// `spool.replay_rate`: the most records ``Spool/nextForReplay(limit:now:)`` hands out per second.
    public var replayRate: Int
    /// The bytes of the ring between the event loop and the writer thread: how long a disk stall the loop rides
    /// out before it must drop (4 MiB ≈ 2 s at 100 000 records/s of 20 bytes… more at real rates).
    public var ringBytes: Int

    public init(
        directory: String,
        mode: Mode = .offline,
        maxBytes: Int = 256 << 20,
        segmentBytes: Int = 4 << 20,
        fsyncIntervalMilliseconds: Int = 1000,
        onFull: FullPolicy = .dropOldest,
        replayRate: Int = 1000,
        ringBytes: Int = 4 << 20
    ) {
        self.directory = directory
        self.mode = mode
        self.maxBytes = maxBytes
        self.segmentBytes = segmentBytes
        self.fsyncIntervalMilliseconds = fsyncIntervalMilliseconds
        self.onFull = onFull
        self.replayRate = replayRate
        self.ringBytes = ringBytes
    }

    /// The options of a validated configuration.
    public init(_ configuration: AgentConfiguration.Spool) {
        self.init(
            directory: configuration.directory,
            mode: configuration.mode,
            maxBytes: Int(configuration.maxBytes),
            segmentBytes: Int(configuration.segmentBytes),
            fsyncIntervalMilliseconds: configuration.fsyncIntervalMilliseconds,
            onFull: configuration.onFull,
            replayRate: configuration.replayRate
        )
    }
}
