#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import Posix
@testable import Spool
import Testing

/// `EIO` cannot be provoked on demand on a real disk, so these tests use the writer's fault injection
/// (`SpoolWriter.injectedWriteError` / `injectedSyncError`, after swift-system's mocking idea).
@Suite("Spool under EIO (injected)")
struct SpoolIOErrorTests {
    @Test func aFailedWriteDropsAndCountsItsBatchAndLaterWritesResume() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let harness = try SpoolHarness(.test(directory.path))
        defer { harness.close() }
        let key = try #require(harness.spool.streamKey("k"))
        for index in 0..<5 { harness.spool.append(key: key, topic: "t", message: [UInt8(index)]) }
        harness.settle()
        harness.spool.writer.injectedWriteError.store(EIO, ordering: .relaxed)
        for index in 5..<15 { harness.spool.append(key: key, topic: "t", message: [UInt8(index)]) }
        harness.settle()
        harness.spool.writer.injectedWriteError.store(0, ordering: .relaxed)
        for index in 15..<20 { harness.spool.append(key: key, topic: "t", message: [UInt8(index)]) }
        harness.settle()
        let metrics = harness.spool.metrics
        #expect(metrics.dropped(.writeError) == 10 && metrics.dropped == 10)
        #expect(metrics.ioErrors >= 1)
        #expect(metrics.lastWriteError?.contains("Input/output error") == true)
        let replayed = harness.replayAll()
        #expect(replayed.map { Int($0.message[0]) } == Array(0..<5) + Array(15..<20))
        // The file holds only whole frames: nothing partial was left behind.
        let segment = contents(SpoolDirectory.segmentPath(directory.path, try #require(directory.segments.last)))
        let scan = segment.withUnsafeBytes { SpoolScan.scan($0) }
        #expect(scan.lostBytes == 0 && scan.records.count == 10)
    }

    @Test func aFailedFsyncIsCountedAndNotReportedDurableButKeepsTheRecords() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let harness = try SpoolHarness(.test(directory.path))
        defer { harness.close() }
        let key = try #require(harness.spool.streamKey("k"))
        harness.spool.append(key: key, topic: "t", message: [0])
        harness.settle()
        let durable = harness.spool.metrics.durableSequence
        harness.spool.writer.injectedSyncError.store(EIO, ordering: .relaxed)
        harness.spool.append(key: key, topic: "t", message: [1])
        harness.settle()
        harness.spool.writer.injectedSyncError.store(0, ordering: .relaxed)
        let metrics = harness.spool.metrics
        #expect(metrics.ioErrors >= 1 && metrics.durableSequence == durable)
        #expect(metrics.dropped == 0)
        #expect(harness.replayAll().map(\.id) == [0, 1])
    }
}
