import EventLoop
@testable import Spool
import Testing

/// Issue 23, item 14: replaying a backlog must hold memory bounded by the read-ahead, not by the backlog.
@Suite("Spool replay memory")
struct SpoolReplayMemoryTests {
    @Test func readAheadStaysBoundedWhileALargeBacklogReplaysInSmallBatches() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let harness = try SpoolHarness(.test(directory.path))
        let key = try #require(harness.spool.streamKey("dev0/bvp"))
        let count = 12 * Spool.readAheadRecords
        for index in 0..<count {
            _ = harness.spool.append(key: key, topic: "empalink/a/dev0/bvp", message: testMessage(index))
        }
        harness.settle()

        // As the agent does: a window's worth per tick, acknowledged, while read-ahead arrives in between.
        var replayed = 0
        var largest = 0
        var idle = 0
        while harness.spool.pendingReplayCount > 0 && idle < 50 {
            let batch = harness.spool.nextForReplay(limit: 100, now: .now)
            idle = batch.isEmpty ? idle + 1 : 0
            for record in batch { harness.spool.acknowledge(record.id) }
            replayed += batch.count
            largest = max(largest, harness.spool.readAhead.count)
            harness.settle()
        }
        harness.close()

        #expect(replayed == count)
        // Two requests' worth plus what was left when the second was asked for; before the fix it held every
        // record replayed so far.
        #expect(largest <= 3 * Spool.readAheadRecords, "read-ahead held \(largest) records of \(count)")
    }
}
