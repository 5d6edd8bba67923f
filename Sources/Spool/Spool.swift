#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import Posix

/// The crash-safe disk spool (SPEC §11): the agent's interface to it, owned by the event-loop thread.
///
/// ## Data path
/// ``append(key:topic:message:qos:retain:timestamp:inFlight:)`` frames the record into a preallocated ring and
/// returns at once; the writer thread (``SpoolWriter``) writes it to the current segment file, group-commits
/// with `fsync` every `fsync_interval_ms`, and reports the durable sequence number back through
/// ``EventLoop/execute(_:)``. The loop never waits on the disk: a full ring is a counted drop.
///
/// ## Replay and acknowledgement
/// Every appended record is *unacknowledged* until ``acknowledge(_:)`` (after the broker's PUBACK). An
/// unacknowledged record is either *pending* (to be replayed) or *in flight* (handed to the broker, live or by
/// replay). ``nextForReplay(limit:now:)`` hands out pending records oldest first, at most `replay_rate` per
/// second, from a read-ahead the writer thread fills; ``rewindReplay()`` (after a lost connection) makes every
/// in-flight record pending again. A segment file is deleted once it and every older one are fully
/// acknowledged; the acknowledgement ledger is persisted atomically at most once per `fsync_interval_ms`.
///
/// ## Use by the agent
/// - `offline`: publish live while connected and the in-flight window has room *and* the stream has no pending
///   records (``pendingCount(for:)``); otherwise `append(..., inFlight: false)`. Replay drains the backlog.
/// - `always`: `append(..., inFlight: true)` every message and publish it live with the returned id; PUBACK
///   acknowledges it; on disconnect call ``rewindReplay()``.
///
/// ## Threads
/// Every member is loop-bound (debug builds assert it) except that the class may be captured by `@Sendable`
/// work items; the writer thread only reaches it through ``EventLoop/execute(_:)``.
public final class Spool: @unchecked Sendable {
    // @unchecked: all mutable state is touched on the event-loop thread only (asserted in debug builds).

    public let options: SpoolOptions
    public let eventLoop: EventLoop
    /// What recovery found at open.
    public let recovery: SpoolRecoveryReport
    /// Called on the loop when read-ahead delivered records to replay, so the agent can pull without polling.
    public var onReplayReady: (() -> Void)?
    /// Called on the loop after ``requestWrittenNotification(beyond:)`` once the writer has written more
    /// (``writtenBelow`` moved).
    public var onWritten: (() -> Void)?
    var writtenRegistration: IORegistration?
    /// Called on the loop with one line for the log when a write-side error happens (a batch lost, an `fsync`, the
    /// cursor or a segment delete failed): the first at once, then at most one per ``writeErrorLogInterval``
    /// carrying the count of those in between. Every error is counted in ``metrics`` either way.
    public var onWriteError: ((String) -> Void)?
    /// The least time between two ``onWriteError`` lines.
    public static let writeErrorLogInterval = Duration.seconds(30)
    var lastWriteErrorLine: MonotonicInstant?
    var suppressedWriteErrors = 0

    let ring: SpoolRing
    let writer: SpoolWriter
    /// The spool directory's `flock`, held from before recovery until ``close()``.
    let lock: FileLock
    var thread: PosixThread?
    var isClosed = false

    // Records and segments.
    var slots: SpoolSlotTable
    var segments: [SpoolSegmentInfo]
    var nextSequence: UInt64
    var unacknowledgedCount = 0
    var pendingCount = 0
    var state = SpoolMetrics()
    /// The active segment was evicted and replaced: the next append tells the writer to roll.
    var pendingRoll = false

    // Stream keys.
    var keyNames: [String] = []
    var keyBytes: [[UInt8]] = []
    var keyIndex: [String: UInt16] = [:]
    var pendingPerKey: [Int] = []
    /// Per key: records waiting for replay (not in flight).
    var replayPendingPerKey: [Int] = []

    // Append scratch: one frame plus the ring entry header, allocated once.
    let scratch: UnsafeMutableRawBufferPointer

    // Replay.
    var readAhead: [SpoolRecord] = []
    var readAheadHead = 0
    var replayNext: UInt64
    var readOutstanding = false
    var readGeneration: UInt64 = 0
    var tokens: Double
    var lastRefill: MonotonicInstant?

    // Ledger.
    var ledgerDirty = false
    var ledgerTimer: TimerHandle?
    var lowWatermark: UInt64

    /// Read-ahead sizes: a request asks for this many records (or bytes), and is sent when fewer are buffered
    /// than half of it.
    static let readAheadRecords = 512
    static let readAheadBytes = 1 << 20

    /// Opens (creating if needed) the spool in `options.directory`, recovers it, and starts the writer thread.
    ///
    /// Call on `eventLoop`'s owner thread, typically before ``EventLoop/run()``. Recovery reads every segment
    /// and may take a while on a large spool; it never fails because of what it reads.
    ///
    /// - Throws: ``SpoolError`` when the directory cannot be created, opened or listed (`.directory`), another
    ///   process holds its lock (`.locked`), the options are out of range, or the writer thread cannot start.
    public init(options: SpoolOptions, eventLoop: EventLoop) throws(SpoolError) {
        eventLoop.assertInEventLoop()
        guard options.maxBytes > 0, options.segmentBytes > 0, options.replayRate > 0,
              options.fsyncIntervalMilliseconds >= 0
        else {
            throw SpoolError(.invalidOptions, "spool options out of range")
        }
        try SpoolRecovery.makeDirectories(options.directory)
        // Before recovery touches anything: a second agent's recovery would cut the first one's growing segment
        // as a "torn tail", and two writers would interleave one spool.
        self.lock = try Self.lock(options.directory)
        let recovered = try SpoolRecovery.run(directory: options.directory)
        self.options = options
        self.eventLoop = eventLoop
        self.recovery = recovered.report
        self.ring = SpoolRing(capacity: max(options.ringBytes, 2 * (SpoolFrame.maxFrameSize + 16)))
        let scratch = UnsafeMutableRawBufferPointer.allocate(
            byteCount: SpoolFrame.maxFrameSize + SpoolWriter.entryHeaderSize, alignment: 16
        )
        self.scratch = scratch
        self.nextSequence = recovered.nextSequence
        self.tokens = Double(max(1, options.replayRate / 10))

        // Loop-side tables from the recovered records.
        let base = recovered.records.first?.sequence ?? recovered.nextSequence
        var slots = SpoolSlotTable(base: base, capacity: max(recovered.records.count * 2, 1 << 12))
        self.keyNames = recovered.keys
        self.keyBytes = recovered.keys.map { Array($0.utf8) }
        for (index, name) in recovered.keys.enumerated() { self.keyIndex[name] = UInt16(index) }
        self.pendingPerKey = [Int](repeating: 0, count: recovered.keys.count)
        self.replayPendingPerKey = self.pendingPerKey
        var unacknowledged = 0
        for record in recovered.records {
            while slots.end < record.sequence { slots.append(.init(state: .absent, key: 0)) }
            if record.acknowledged {
                slots.append(.init(state: .acknowledged, key: record.key))
            } else {
                slots.append(.init(state: .pending, key: record.key))
                if Int(record.key) < self.pendingPerKey.count {
                    self.pendingPerKey[Int(record.key)] += 1
                    self.replayPendingPerKey[Int(record.key)] += 1
                }
                unacknowledged += 1
            }
        }
        while slots.end < recovered.nextSequence { slots.append(.init(state: .absent, key: 0)) }
        self.slots = slots
        self.unacknowledgedCount = unacknowledged
        self.pendingCount = unacknowledged
        self.replayNext = base
        self.lowWatermark = base
        var segments = recovered.segments
        segments.append(SpoolSegmentInfo(
            number: recovered.nextSegment, firstSequence: recovered.nextSequence,
            endSequence: recovered.nextSequence, bytes: 0, unacknowledged: 0, firstTimestamp: nil
        ))
        self.segments = segments
        self.state.bytes = segments.reduce(0) { $0 + $1.bytes }
        self.state.recoveryLostBytes = recovered.report.lostBytes
        self.readAhead.reserveCapacity(Self.readAheadRecords * 2)

        let bridge = SpoolReportBridge()
        do throws(Errno) {
            self.writer = try SpoolWriter(
                directory: options.directory,
                fsyncIntervalMilliseconds: options.fsyncIntervalMilliseconds,
                ring: self.ring,
                segmentNumbers: segments.map(\.number),
                currentSegment: recovered.nextSegment,
                writtenThrough: recovered.lastSequence,
                report: { report in bridge.deliver(report) }
            )
        } catch {
            scratch.deallocate()
            throw SpoolError(.resources, "cannot create the spool writer's eventfds", errno: error)
        }
        bridge.attach(self)
        do throws(Errno) {
            self.writtenRegistration = try eventLoop.register(self.writer.writtenFD, interest: .readable) {
                [weak self] _ in self?.writtenSignalled()
            }
        } catch {
            self.isClosed = true  // deinit frees the rest
            throw SpoolError(.resources, "cannot watch the spool writer's eventfd on the event loop", errno: error)
        }
        self.advanceLowWatermark()
        // Recovery read whole segments and listed every record: give that memory back before the agent runs.
        self.releaseFreedMemory()
        let writer = self.writer
        do throws(Errno) {
            self.thread = try PosixThread.spawn(name: "spool-writer") { writer.run() }
        } catch {
            self.isClosed = true  // deinit frees the rest
            throw SpoolError(.resources, "cannot start the spool writer thread", errno: error)
        }
    }

    deinit {
        if !self.isClosed {
            self.writer.post { $0.stop = true }
            self.thread?.join()
        }
        self.scratch.deallocate()
    }

    /// Registers a (device, stream) key such as "9ff167/bvp", or returns the one already registered.
    ///
    /// - Returns: `nil` when the name is longer than 65 535 bytes or 65 535 keys exist.
    public func streamKey(_ name: String) -> SpoolStreamKey? {
        self.eventLoop.assertInEventLoop()
        if let known = self.keyIndex[name] { return SpoolStreamKey(index: known) }
        let bytes = Array(name.utf8)
        guard bytes.count <= Int(UInt16.max), self.keyNames.count < Int(UInt16.max) else { return nil }
        let index = UInt16(self.keyNames.count)
        self.keyNames.append(name)
        self.keyBytes.append(bytes)
        self.keyIndex[name] = index
        self.pendingPerKey.append(0)
        self.replayPendingPerKey.append(0)
        return SpoolStreamKey(index: index)
    }

    /// The name a key was registered (or recovered) under.
    public func name(of key: SpoolStreamKey) -> String? {
        Int(key.index) < self.keyNames.count ? self.keyNames[Int(key.index)] : nil
    }

    /// Every key known, including those recovered from disk.
    public var streamKeys: [SpoolStreamKey] {
        (0..<self.keyNames.count).map { SpoolStreamKey(index: UInt16($0)) }
    }

    /// Records of `key` not yet acknowledged. While it is non-zero, the stream's live records must be appended
    /// behind them rather than published directly, to keep per-stream order (SPEC §11).
    public func pendingCount(for key: SpoolStreamKey) -> Int {
        Int(key.index) < self.pendingPerKey.count ? self.pendingPerKey[Int(key.index)] : 0
    }

    /// The records of `key` waiting for replay, not counting those in flight. In `always` mode every record is
    /// unacknowledged until its PUBACK, so this, not ``pendingCount(for:)``, says whether a live record must go
    /// behind spooled ones (after an outage, or a crash).
    public func replayPendingCount(for key: SpoolStreamKey) -> Int {
        Int(key.index) < self.replayPendingPerKey.count ? self.replayPendingPerKey[Int(key.index)] : 0
    }

    /// Asks for one ``onWritten`` call once the writer has written past what it has now.
    ///
    /// - Returns: whether `id` is written already (``writtenBelow`` > `id`); then no call is needed, though one
    ///   may still come.
    public func requestWrittenNotification(beyond id: UInt64) -> Bool {
        self.eventLoop.assertInEventLoop()
        // Set the flag before reading the position: the writer stores the position before it takes the flag, so
        // one of the two sees the other (sequentially consistent) and no write goes unnoticed.
        self.writer.writtenWanted.store(true, ordering: .sequentiallyConsistent)
        return self.writer.writtenBelow.load(ordering: .sequentiallyConsistent) > id
    }

    func writtenSignalled() {
        var counter: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &counter) { raw in Glibc.read(self.writer.writtenFD.rawValue, raw.baseAddress, 8) }
        guard !self.isClosed else { return }
        self.onWritten?()
    }

    /// Whether `id` is in flight: appended with `inFlight: true` (or handed out by replay) and neither acknowledged,
    /// rewound nor gone (a failed write, an eviction) since.
    public func isInFlight(_ id: UInt64) -> Bool {
        self.slots[id]?.state == .inFlight
    }

    /// Makes an in-flight record pending again: the caller could not hand it to the broker after all (`always`
    /// mode: the window filled, the connection went). Replay sends it. Other ids are ignored.
    public func returnToReplay(_ id: UInt64) {
        self.eventLoop.assertInEventLoop()
        guard let slot = self.slots[id], slot.state == .inFlight else { return }
        self.slots.setState(.pending, of: id)
        self.pendingCount += 1
        if Int(slot.key) < self.replayPendingPerKey.count { self.replayPendingPerKey[Int(slot.key)] += 1 }
        // The read-ahead may be past it: restart from the oldest pending record.
        if id < self.replayNext {
            self.readAhead.removeAll(keepingCapacity: true)
            self.readAheadHead = 0
            self.replayNext = self.slots.base
            self.readGeneration &+= 1
            self.readOutstanding = false
        }
    }

    /// Records not yet acknowledged, in flight or not.
    public var unacknowledged: Int { self.unacknowledgedCount }

    /// Records waiting to be replayed (not in flight).
    public var pendingReplayCount: Int { self.pendingCount }

    /// Every record with an id below this is written to its segment file: in the page cache, so it survives a
    /// process crash (power cuts need the next commit, ``SpoolMetrics/durableSequence``). Readable at any time
    /// without a syscall; a strict `always` mode publishes a record live only once its id is below it.
    public var writtenBelow: UInt64 {
        self.writer.writtenBelow.load(ordering: .acquiring)
    }

    /// The counters, merged with the writer thread's.
    public var metrics: SpoolMetrics {
        self.eventLoop.assertInEventLoop()
        var metrics = self.state
        metrics.records = self.unacknowledgedCount
        metrics.segments = self.segments.count
        metrics.oldestTimestamp = self.segments.first(where: { $0.unacknowledged > 0 })?.firstTimestamp
        metrics.fsyncs = self.writer.fsyncs.load(ordering: .relaxed)
        metrics.commits = self.writer.commits.load(ordering: .relaxed)
        metrics.skippedCommits = self.writer.skippedCommits.load(ordering: .relaxed)
        metrics.bytesWritten = self.writer.bytesWritten.load(ordering: .relaxed)
        metrics.noSpaceErrors = self.writer.noSpaceErrors.load(ordering: .relaxed)
        metrics.ioErrors = self.writer.ioErrors.load(ordering: .relaxed)
        metrics.otherWriteErrors = self.writer.otherErrors.load(ordering: .relaxed)
        return metrics
    }

    /// Blocks until the writer has written and committed everything appended so far and written the ledger.
    /// Its reports are queued on the loop and take effect when the loop next runs.
    ///
    /// For shutdown, tests and benchmarks; the agent's steady state never calls it.
    public func synchronize() {
        self.eventLoop.assertInEventLoop()
        guard !self.isClosed else { return }
        self.sendLedger()
        self.writer.synchronize()
    }

    /// Writes everything, commits, persists the ledger and stops the writer thread. Appends after it are
    /// dropped as ``SpoolDropReason/closed``. Blocks for at most one commit.
    public func close() {
        self.eventLoop.assertInEventLoop()
        guard !self.isClosed else { return }
        self.sendLedger()
        self.isClosed = true
        if let timer = self.ledgerTimer {
            self.eventLoop.cancel(timer)
            self.ledgerTimer = nil
        }
        self.writer.post { $0.stop = true }
        self.thread?.join()
        self.thread = nil
        if let registration = self.writtenRegistration {
            self.eventLoop.deregister(registration)
            self.writtenRegistration = nil
        }
        self.lock.release()
    }

    /// Takes the directory's exclusive lock without waiting.
    static func lock(_ directory: String) throws(SpoolError) -> FileLock {
        do throws(Errno) {
            return try FileLock(path: directory, createFile: false)
        } catch {
            guard error == .wouldBlock else {
                throw SpoolError(.directory, "cannot open spool directory \(directory)", errno: error)
            }
            throw SpoolError(.locked, "spool directory \(directory) is in use by another process (is another "
                                 + "empalinkd running with this spool.dir?)")
        }
    }
}

/// Routes writer reports to the spool on its loop without the writer holding the spool alive.
final class SpoolReportBridge: @unchecked Sendable {
    // @unchecked: `spool` is set once, before the writer thread starts, and only read afterwards.
    private weak var spool: Spool?
    private var eventLoop: EventLoop?

    func attach(_ spool: Spool) {
        self.spool = spool
        self.eventLoop = spool.eventLoop
    }

    func deliver(_ report: SpoolWriterReport) {
        guard let eventLoop = self.eventLoop else { return }
        eventLoop.execute { [weak self] in
            self?.spool?.handle(report)
        }
    }
}
