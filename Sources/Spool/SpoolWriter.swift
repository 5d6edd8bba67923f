#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Posix
import Synchronization

/// The spool's writer thread: drains the ring into segment files, group-commits with `fsync` every
/// `fsync_interval_ms`, writes the ledger, deletes segments and reads ahead for replay.
///
/// Only this thread touches segment files after recovery, so the loop never waits on the disk. The members
/// marked "writer thread" below are touched by the writer thread only (and by the creating thread before it
/// starts); the rest is immutable, atomic, or behind ``commands``.
final class SpoolWriter: @unchecked Sendable {
    /// Ring entry header: u32 frame size, u32 flags, u64 segment number (for ``rollFlag``).
    static let entryHeaderSize = 16
    /// The entry starts a new segment, whose number is in the entry header.
    static let rollFlag: UInt32 = 1

    let directory: String
    let fsyncIntervalNanoseconds: UInt64
    let ring: SpoolRing
    let report: @Sendable (SpoolWriterReport) -> Void
    let commands = Mutex(SpoolWriterCommands())
    /// Wakes the writer (non-blocking eventfd it polls).
    let wakeFD: FileDescriptor
    /// Signals a thread waiting in ``synchronize()`` (blocking eventfd).
    let syncDoneFD: FileDescriptor
    /// Set while the writer is about to sleep, so producers write the eventfd only then.
    let waiting = Atomic<Bool>(false)
    /// Tells the loop that ``writtenBelow`` moved (non-blocking eventfd the loop watches), written only while
    /// ``writtenWanted`` is set: `always` mode publishes a record once it is in a segment file.
    let writtenFD: FileDescriptor
    /// Set by the loop when it waits for ``writtenBelow`` to pass a record; the writer clears it as it signals.
    let writtenWanted = Atomic<Bool>(false)

    /// Every record below this sequence number is acknowledged (or gone), as the loop last saw it: a commit
    /// whose records are all below it protects nothing and is skipped.
    let acknowledgedBelow = Atomic<UInt64>(0)
    /// One past the highest sequence number written to a segment file (in the page cache, so it survives a
    /// process crash); 0 before the first write.
    let writtenBelow = Atomic<UInt64>(0)
    /// Fault injection for tests, after swift-system's mocking: a non-zero errno here makes the next segment
    /// writes (or fsyncs) fail with it instead of calling the kernel. `EIO` cannot be provoked on demand otherwise.
    let injectedWriteError = Atomic<CInt>(0)
    let injectedSyncError = Atomic<CInt>(0)
    let fsyncs = Atomic<UInt64>(0)
    let skippedCommits = Atomic<UInt64>(0)
    let commits = Atomic<UInt64>(0)
    let bytesWritten = Atomic<UInt64>(0)
    let noSpaceErrors = Atomic<UInt64>(0)
    let ioErrors = Atomic<UInt64>(0)
    let otherErrors = Atomic<UInt64>(0)

    // Writer thread.
    var segmentNumbers: [UInt64]
    var currentSegment: UInt64
    var currentFD: FileDescriptor?
    var currentSize = 0
    var unsyncedClosed: [FileDescriptor] = []
    /// Segments the loop released or evicted before the writer rolled past them: deleted when it does.
    var deferredDeletes: [UInt64] = []
    var directoryDirty = false
    var dirtySince: UInt64?
    var writtenThrough: UInt64?
    var durableThrough: UInt64?
    let writeBuffer: UnsafeMutableRawBufferPointer
    var writeUsed = 0
    var batchFirst: UInt64?
    var batchLast: UInt64 = 0
    var pendingLedger: SpoolLedger?
    var lastLedgerWrite: UInt64 = 0
    var readerSegment: UInt64?
    var readerFD: FileDescriptor?
    var readerOffset = 0
    var readerLastSequence: UInt64?
    let readBuffer: UnsafeMutableRawBufferPointer

    init(
        directory: String,
        fsyncIntervalMilliseconds: Int,
        ring: SpoolRing,
        segmentNumbers: [UInt64],
        currentSegment: UInt64,
        writtenThrough: UInt64?,
        report: @escaping @Sendable (SpoolWriterReport) -> Void
    ) throws(Errno) {
        let wake = eventfd(0, CInt(EFD_NONBLOCK | EFD_CLOEXEC))
        guard wake >= 0 else { throw Errno.current }
        let done = eventfd(0, CInt(EFD_CLOEXEC))
        guard done >= 0 else {
            let error = Errno.current
            _ = Glibc.close(wake)
            throw error
        }
        let written = eventfd(0, CInt(EFD_NONBLOCK | EFD_CLOEXEC))
        guard written >= 0 else {
            let error = Errno.current
            _ = Glibc.close(wake)
            _ = Glibc.close(done)
            throw error
        }
        self.wakeFD = FileDescriptor(rawValue: wake)
        self.syncDoneFD = FileDescriptor(rawValue: done)
        self.writtenFD = FileDescriptor(rawValue: written)
        self.directory = directory
        self.fsyncIntervalNanoseconds = UInt64(max(0, fsyncIntervalMilliseconds)) * 1_000_000
        self.ring = ring
        self.segmentNumbers = segmentNumbers
        self.currentSegment = currentSegment
        self.writtenThrough = writtenThrough
        self.durableThrough = writtenThrough
        self.report = report
        self.writeBuffer = .allocate(byteCount: max(1 << 20, SpoolFrame.maxFrameSize), alignment: 16)
        self.readBuffer = .allocate(byteCount: max(1 << 20, SpoolFrame.maxFrameSize), alignment: 16)
    }

    deinit {
        self.writeBuffer.deallocate()
        self.readBuffer.deallocate()
        self.wakeFD.close()
        self.syncDoneFD.close()
        self.writtenFD.close()
    }

    // MARK: - Any thread

    /// Wakes the writer if it sleeps. Call after pushing to the ring or posting commands.
    func notify() {
        if self.waiting.exchange(false, ordering: .sequentiallyConsistent) {
            var one: UInt64 = 1
            _ = withUnsafeBytes(of: &one) { raw in
                retryingOnInterrupt { Glibc.write(self.wakeFD.rawValue, raw.baseAddress, 8) }
            }
        }
    }

    /// Posts commands and wakes the writer.
    func post(_ update: (inout SpoolWriterCommands) -> Void) {
        self.commands.withLock { update(&$0) }
        self.notify()
    }

    /// Blocks until the writer has written and committed everything pushed before the call, written the
    /// ledger, and posted its reports. For shutdown and tests; the loop never calls it in steady state.
    func synchronize() {
        self.post { $0.syncRequested = true }
        var counter: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &counter) { raw in
            retryingOnInterrupt { Glibc.read(self.syncDoneFD.rawValue, raw.baseAddress, 8) }
        }
    }

    // MARK: - Writer thread

    /// The thread's body: runs until a stop command, committing everything before it returns.
    func run() {
        while true {
            let work = self.commands.withLock { commands -> SpoolWriterCommands in
                let taken = commands
                commands = SpoolWriterCommands()
                return taken
            }
            if !work.deleteSegments.isEmpty { self.deleteSegments(work.deleteSegments) }
            if let ledger = work.ledger { self.pendingLedger = ledger }
            self.drainRing()
            if let request = work.read { self.serve(request) }
            if work.releaseMemory {
                // Both buffers are scratch between calls: drainRing flushed the write buffer, serve is done.
                discardPages(self.writeBuffer)
                discardPages(self.readBuffer)
                _ = clinux_malloc_trim(0)
            }
            let now = clinux_monotonic_nanoseconds()
            let force = work.syncRequested || work.stop
            if let since = self.dirtySince, force || now >= since &+ self.fsyncIntervalNanoseconds {
                self.commit()
            } else if force && self.directoryDirty {
                self.syncDirectory()
            }
            // The loop rate-limits ledger snapshots; a failed write is retried after a commit interval.
            if self.pendingLedger != nil, force || now >= self.lastLedgerWrite &+ self.fsyncIntervalNanoseconds {
                self.writeLedger(now: now)
            }
            if work.syncRequested {
                var one: UInt64 = 1
                _ = withUnsafeBytes(of: &one) { raw in
                    retryingOnInterrupt { Glibc.write(self.syncDoneFD.rawValue, raw.baseAddress, 8) }
                }
            }
            if work.stop { break }
            self.sleep()
        }
        self.currentFD?.close()
        self.currentFD = nil
        self.readerFD?.close()
        self.readerFD = nil
    }

    /// Sleeps until woken, or until the next commit or ledger write is due.
    private func sleep() {
        self.waiting.store(true, ordering: .sequentiallyConsistent)
        let hasWork = self.ring.availableBytes > 0 || !self.commands.withLock { $0.isEmpty }
        if hasWork {
            self.waiting.store(false, ordering: .sequentiallyConsistent)
            return
        }
        var deadline: UInt64?
        if let since = self.dirtySince { deadline = since &+ self.fsyncIntervalNanoseconds }
        if self.pendingLedger != nil {
            let ledgerDue = self.lastLedgerWrite &+ self.fsyncIntervalNanoseconds
            deadline = min(deadline ?? ledgerDue, ledgerDue)
        }
        var timeout: CInt = -1
        if let deadline {
            let now = clinux_monotonic_nanoseconds()
            timeout = deadline <= now ? 0 : CInt(min((deadline - now + 999_999) / 1_000_000, 60_000))
        }
        var descriptor = pollfd(fd: self.wakeFD.rawValue, events: Int16(POLLIN), revents: 0)
        _ = Glibc.poll(&descriptor, 1, timeout)
        var counter: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &counter) { raw in Glibc.read(self.wakeFD.rawValue, raw.baseAddress, 8) }
        self.waiting.store(false, ordering: .sequentiallyConsistent)
    }

    /// Moves every complete entry from the ring into segment files.
    func drainRing() {
        var header: (UInt64, UInt64) = (0, 0)
        var budget = self.ring.capacity
        while budget > 0 && self.ring.availableBytes >= Self.entryHeaderSize {
            withUnsafeMutableBytes(of: &header) { self.ring.peek(into: $0) }
            let (frameSize, flags, segment) = withUnsafeBytes(of: &header) { raw in
                (Int(raw.load(fromByteOffset: 0, as: UInt32.self)), raw.load(fromByteOffset: 4, as: UInt32.self),
                 raw.load(fromByteOffset: 8, as: UInt64.self))
            }
            if flags & Self.rollFlag != 0 {
                self.flush()
                self.roll(to: segment)
            }
            if self.writeUsed + frameSize > self.writeBuffer.count { self.flush() }
            let destination = UnsafeMutableRawBufferPointer(
                rebasing: self.writeBuffer[self.writeUsed..<(self.writeUsed + frameSize)]
            )
            self.ring.peek(into: destination, skip: Self.entryHeaderSize)
            let sequence = UInt64(littleEndian: destination.loadUnaligned(fromByteOffset: 12, as: UInt64.self))
            if self.batchFirst == nil { self.batchFirst = sequence }
            self.batchLast = sequence
            self.writeUsed += frameSize
            self.ring.consume(Self.entryHeaderSize + frameSize)
            budget -= Self.entryHeaderSize + frameSize
        }
        self.flush()
    }

    /// Writes the buffered batch to the current segment; on failure undoes the partial write and reports the
    /// batch's records as gone.
    func flush() {
        guard self.writeUsed > 0, let first = self.batchFirst else { return }
        let bytes = self.writeUsed
        let last = self.batchLast
        self.writeUsed = 0
        self.batchFirst = nil
        do throws(Errno) {
            if self.currentFD == nil {
                let fd = try FileDescriptor.open(
                    SpoolDirectory.segmentPath(self.directory, self.currentSegment),
                    flags: O_WRONLY | O_CREAT | O_NOFOLLOW, mode: 0o600
                )
                self.currentFD = fd
                self.directoryDirty = true
                self.currentSize = (try? fd.size()) ?? 0
            }
            guard let fd = self.currentFD else { return }
            do throws(Errno) {
                try self.pwriteAll(fd, UnsafeRawBufferPointer(rebasing: self.writeBuffer[0..<bytes]),
                                   at: self.currentSize)
            } catch {
                // Leave no partial frame behind: the next batch must start on a frame boundary.
                try? fd.truncate(to: self.currentSize)
                throw error
            }
            self.currentSize += bytes
            self.bytesWritten.add(UInt64(bytes), ordering: .relaxed)
            self.writtenThrough = last
            self.writtenBelow.store(last + 1, ordering: .sequentiallyConsistent)
            if self.writtenWanted.exchange(false, ordering: .sequentiallyConsistent) {
                var one: UInt64 = 1
                _ = withUnsafeBytes(of: &one) { raw in
                    retryingOnInterrupt { Glibc.write(self.writtenFD.rawValue, raw.baseAddress, 8) }
                }
            }
            if self.dirtySince == nil { self.dirtySince = clinux_monotonic_nanoseconds() }
        } catch {
            self.count(error)
            self.report(.writeFailed(
                segment: self.currentSegment, firstSequence: first, lastSequence: last, bytes: bytes, error: error
            ))
        }
    }

    private func pwriteAll(_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int) throws(Errno) {
        let injected = self.injectedWriteError.load(ordering: .relaxed)
        if injected != 0 { throw Errno(rawValue: injected) }
        var done = 0
        while done < bytes.count {
            let result = retryingOnInterrupt {
                Glibc.pwrite(fd.rawValue, bytes.baseAddress.map { $0 + done }, bytes.count - done, off_t(offset + done))
            }
            switch result {
            case .success(let count): done += count
            case .failure(let error): throw error
            }
        }
    }

    /// Starts segment `number`; the previous file waits for the next commit to be synced and closed.
    private func roll(to number: UInt64) {
        if let fd = self.currentFD {
            if self.dirtySince != nil { self.unsyncedClosed.append(fd) } else { fd.close() }
        }
        self.currentFD = nil
        self.currentSize = 0
        let previous = self.currentSegment
        self.currentSegment = number
        if let index = self.deferredDeletes.firstIndex(of: previous) {
            self.deferredDeletes.remove(at: index)
            self.deleteSegments([previous])
        }
        if self.segmentNumbers.last.map({ $0 < number }) ?? true { self.segmentNumbers.append(number) }
    }

    /// One group commit: sync every file written since the last one, and the directory when entries changed.
    ///
    /// When the broker has already acknowledged everything written (`always` mode with a healthy broker), there
    /// is nothing left to protect and the fsyncs are skipped: flash is spared and the commit costs nothing.
    func commit() {
        if let written = self.writtenThrough, self.acknowledgedBelow.load(ordering: .relaxed) > written {
            for fd in self.unsyncedClosed { fd.close() }
            self.unsyncedClosed.removeAll(keepingCapacity: true)
            self.dirtySince = nil
            self.skippedCommits.add(1, ordering: .relaxed)
            return
        }
        var failed = false
        for fd in self.unsyncedClosed {
            if !self.syncFile(fd) { failed = true }
            fd.close()
        }
        self.unsyncedClosed.removeAll(keepingCapacity: true)
        if let fd = self.currentFD, !self.syncFile(fd) { failed = true }
        if self.directoryDirty && !self.syncDirectory() { failed = true }
        self.dirtySince = nil
        self.commits.add(1, ordering: .relaxed)
        // After a failed fsync the kernel may have dropped the dirty pages: nothing written since the last good
        // commit is known to be durable, so do not claim it.
        if !failed, let written = self.writtenThrough, written != self.durableThrough {
            self.durableThrough = written
            self.report(.durable(throughSequence: written))
        }
    }

    private func syncFile(_ fd: FileDescriptor) -> Bool {
        self.fsyncs.add(1, ordering: .relaxed)
        do throws(Errno) {
            let injected = self.injectedSyncError.load(ordering: .relaxed)
            if injected != 0 { throw Errno(rawValue: injected) }
            try fd.sync()
            return true
        } catch {
            self.count(error)
            self.report(.error(error, "fsync of a segment failed"))
            return false
        }
    }

    @discardableResult
    private func syncDirectory() -> Bool {
        self.fsyncs.add(1, ordering: .relaxed)
        do throws(Errno) {
            try FileSystem.syncDirectory(self.directory)
            self.directoryDirty = false
            return true
        } catch {
            self.count(error)
            self.report(.error(error, "fsync of the spool directory failed"))
            return false
        }
    }

    private func writeLedger(now: UInt64) {
        guard let ledger = self.pendingLedger else { return }
        self.lastLedgerWrite = now
        self.fsyncs.add(2, ordering: .relaxed)
        do throws(Errno) {
            try ledger.write(directory: self.directory)
            self.pendingLedger = nil
        } catch {
            // Kept for the next round; an older ledger on disk only means more duplicates after a crash.
            self.count(error)
            let hint = error == .isDirectory ? " (a non-empty directory is in the way: move it)" : ""
            self.report(.error(error, "writing the cursor \(self.directory)/\(SpoolLedger.fileName) failed\(hint)"))
        }
    }

    private func deleteSegments(_ numbers: [UInt64]) {
        for number in numbers {
            // The loop may release a segment before the writer has finished it, or even reached it (acknowledged
            // as soon as appended): delete it when the writer rolls past it, or the file would be orphaned.
            if number >= self.currentSegment {
                self.deferredDeletes.append(number)
                continue
            }
            if self.readerSegment == number {
                self.readerFD?.close()
                self.readerFD = nil
                self.readerSegment = nil
            }
            do throws(Errno) {
                try FileSystem.removeFile(SpoolDirectory.segmentPath(self.directory, number))
            } catch {
                if error != .noSuchFileOrDirectory {
                    self.count(error)
                    self.report(.error(error, "deleting segment \(number) failed"))
                }
            }
            self.segmentNumbers.removeAll { $0 == number }
            self.directoryDirty = true
        }
    }

    private func count(_ error: Errno) {
        switch error {
        case .noSpace: self.noSpaceErrors.add(1, ordering: .relaxed)
        case .ioError: self.ioErrors.add(1, ordering: .relaxed)
        default: self.otherErrors.add(1, ordering: .relaxed)
        }
    }
}
