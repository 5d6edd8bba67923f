import EventLoop
import Posix
@testable import Spool
import Testing
import TestSupport

@Suite("Spool append, replay, acknowledge")
struct SpoolRoundTripTests {
    @Test func appendedRecordsReplayByteIdenticalOldestFirstAndLeaveWhenAcknowledged() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let harness = try SpoolHarness(.test(directory.path))
        defer { harness.close() }
        let key = try #require(harness.spool.streamKey("9ff167/bvp"))
        var ids: [UInt64] = []
        for index in 0..<300 {
            let result = harness.spool.append(
                key: key, topic: "empalink/pi/9ff167/bvp", message: testMessage(index), qos: 1, retain: index == 7
            )
            guard case .appended(let id) = result else {
                Issue.record("append \(index) was \(result)")
                return
            }
            ids.append(id)
        }
        #expect(harness.spool.pendingCount(for: key) == 300)
        harness.settle()
        #expect(harness.spool.metrics.durableSequence == ids.last)
        #expect(harness.spool.writtenBelow == (ids.last ?? 0) + 1)

        let replayed = harness.replayAll()
        #expect(replayed.map(\.id) == ids)
        #expect(replayed.map(\.message) == (0..<300).map(testMessage))
        #expect(replayed.allSatisfy { $0.topicString == "empalink/pi/9ff167/bvp" && $0.qos == 1 && $0.key == key })
        #expect(replayed.map(\.retain) == (0..<300).map { $0 == 7 })
        #expect(harness.spool.unacknowledged == 0)
        #expect(harness.spool.pendingCount(for: key) == 0)
        let metrics = harness.spool.metrics
        #expect(metrics.appended == 300 && metrics.acknowledged == 300 && metrics.dropped == 0)
    }

    @Test func perStreamOrderIsKeptAcrossInterleavedKeys() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let harness = try SpoolHarness(.test(directory.path, segmentBytes: 4096))
        defer { harness.close() }
        let keys = try ["a/bvp", "a/acc", "b/bvp"].map { try #require(harness.spool.streamKey($0)) }
        var generator = SplitMix64(seed: 7)
        var expected: [SpoolStreamKey: [Int]] = [:]
        for index in 0..<600 {
            let key = keys[Int(generator.next() % 3)]
            harness.spool.append(key: key, topic: "t/\(key.index)", message: testMessage(index))
            expected[key, default: []].append(index)
        }
        harness.settle()
        // Replay in small bites, acknowledging out of order within each bite.
        var seen: [SpoolStreamKey: [Int]] = [:]
        var idle = 0
        while harness.spool.pendingReplayCount > 0 && idle < 50 {
            let batch = harness.spool.nextForReplay(limit: 7)
            if batch.isEmpty {
                idle += 1
                harness.settle()
            }
            for record in batch {
                let text = String(decoding: record.message, as: UTF8.self)
                let digits = text.dropFirst("{\"seq\":".count).prefix(while: { $0 != "," })
                seen[record.key, default: []].append(Int(digits) ?? -1)
            }
            for record in batch.reversed() { harness.spool.acknowledge(record.id) }
        }
        #expect(seen == expected)
    }

    @Test func segmentsRollAtSegmentBytesAndAreDeletedOnceAcknowledged() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let harness = try SpoolHarness(.test(directory.path, segmentBytes: 2048))
        defer { harness.close() }
        let key = try #require(harness.spool.streamKey("k"))
        let message = [UInt8](repeating: 0x41, count: 200)
        let frame = SpoolFrame.frameSize(keyCount: 1, topicCount: 1, messageCount: 200)
        for _ in 0..<50 { harness.spool.append(key: key, topic: "t", message: message) }
        harness.settle()
        let perSegment = 2048 / frame
        let expectedSegments = (50 + perSegment - 1) / perSegment
        #expect(directory.segments.count == expectedSegments)
        for number in directory.segments {
            let size = contents(SpoolDirectory.segmentPath(directory.path, number)).count
            #expect(size <= 2048 && size % frame == 0)
        }
        // Acknowledge the first two segments' records: exactly those two files go.
        let replayed = harness.replayAll(acknowledge: false)
        #expect(replayed.count == 50)
        let before = directory.segments
        for record in replayed.prefix(2 * perSegment) { harness.spool.acknowledge(record.id) }
        harness.settle()
        #expect(directory.segments == Array(before.dropFirst(2)))
        // Acknowledging the rest deletes all but the active segment.
        for record in replayed.dropFirst(2 * perSegment) { harness.spool.acknowledge(record.id) }
        harness.settle()
        #expect(directory.segments == [before.last].compactMap { $0 })
        #expect(harness.spool.metrics.records == 0)
    }

    @Test(arguments: [SpoolOptions.FullPolicy.dropNewest, .dropOldest])
    func maxBytesIsEnforcedWithExactDropCounts(policy: SpoolOptions.FullPolicy) throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let message = [UInt8](repeating: 0x42, count: 100)
        let frame = SpoolFrame.frameSize(keyCount: 1, topicCount: 1, messageCount: 100)
        let perSegment = 10
        // Room for exactly 4 segments of 10 records.
        let options = SpoolOptions.test(
            directory.path, maxBytes: 4 * perSegment * frame, segmentBytes: perSegment * frame, onFull: policy
        )
        let harness = try SpoolHarness(options)
        defer { harness.close() }
        let key = try #require(harness.spool.streamKey("k"))
        var kept: [UInt64] = []
        var results: [SpoolAppendResult] = []
        for index in 0..<100 {
            var bytes = message
            bytes[0] = UInt8(index)
            results.append(harness.spool.append(key: key, topic: "t", message: bytes))
            if case .appended(let id) = results.last { kept.append(id) }
        }
        harness.settle()
        let metrics = harness.spool.metrics
        #expect(metrics.bytes <= options.maxBytes)
        let replayed = harness.replayAll()
        switch policy {
        case .dropNewest:
            // The first 40 fit; the other 60 are refused.
            #expect(metrics.dropped(.fullNewest) == 60 && metrics.dropped == 60)
            #expect(replayed.map { Int($0.message[0]) } == Array(0..<40))
        case .dropOldest:
            // Each segment eviction drops 10 old records; the newest 31..40 remain.
            let dropped = Int(metrics.dropped(.fullOldest))
            #expect(metrics.dropped == UInt64(dropped))
            #expect(dropped + replayed.count == 100)
            #expect(replayed.map { Int($0.message[0]) } == Array((100 - replayed.count)..<100))
            #expect(replayed.count > 30 && dropped % perSegment == 0)
        }
    }

    @Test func acknowledgementsSurviveARestartSoOnlyUnacknowledgedRecordsReplay() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let harness = try SpoolHarness(.test(directory.path, segmentBytes: 1024))
        defer { harness.close() }
        let key = try #require(harness.spool.streamKey("9ff167/gsr"))
        for index in 0..<120 { harness.spool.append(key: key, topic: "t", message: testMessage(index)) }
        harness.settle()
        let first = harness.replayAll(acknowledge: false)
        #expect(first.count == 120)
        // Acknowledge every third record and the first 40, out of order.
        var acknowledged = Set<UInt64>()
        for record in first.reversed() where record.id % 3 == 0 || record.id < 40 {
            harness.spool.acknowledge(record.id)
            acknowledged.insert(record.id)
        }
        try harness.reopen()
        #expect(harness.spool.recovery.cursor == .valid)
        #expect(harness.spool.recovery.pendingRecords == 120 - acknowledged.count)
        let key2 = try #require(harness.spool.streamKey("9ff167/gsr"))
        #expect(key2 == key && harness.spool.pendingCount(for: key2) == 120 - acknowledged.count)
        let second = harness.replayAll()
        #expect(second.map(\.id) == first.map(\.id).filter { !acknowledged.contains($0) })
        #expect(second.map(\.message) == first.filter { !acknowledged.contains($0.id) }.map(\.message))
        // New appends continue the sequence after a restart.
        guard case .appended(let next) = harness.spool.append(key: key2, topic: "t", message: [1]) else {
            Issue.record("append after restart failed")
            return
        }
        #expect(next == 120)
        try harness.reopen()
        #expect(harness.replayAll().map(\.id) == [120])
    }

    @Test func inFlightRecordsAreSkippedUntilRewound() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let harness = try SpoolHarness(.test(directory.path))
        defer { harness.close() }
        let key = try #require(harness.spool.streamKey("k"))
        var ids: [UInt64] = []
        for index in 0..<10 {
            if case .appended(let id) = harness.spool.append(key: key, topic: "t", message: [UInt8(index)],
                                                           inFlight: true) {
                ids.append(id)
            }
        }
        harness.settle()
        #expect(harness.spool.pendingReplayCount == 0)
        #expect(harness.spool.nextForReplay(limit: 100).isEmpty)
        for id in ids.prefix(4) { harness.spool.acknowledge(id) }
        harness.spool.rewindReplay()  // the connection dropped before the other PUBACKs
        #expect(harness.replayAll().map(\.id) == Array(ids.dropFirst(4)))
    }

    @Test func replayIsLimitedToReplayRate() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var options = SpoolOptions.test(directory.path)
        options.replayRate = 100
        let harness = try SpoolHarness(options)
        defer { harness.close() }
        let key = try #require(harness.spool.streamKey("k"))
        for index in 0..<500 { harness.spool.append(key: key, topic: "t", message: [UInt8(index % 256)]) }
        harness.settle()
        let start = MonotonicInstant.now
        _ = harness.spool.nextForReplay(limit: 1000, now: start)  // starts the read-ahead
        harness.settle()
        // Simulated clock: 2 s at 100/s hands out about 200, never more than rate × time + burst.
        var handed = 0
        for step in 1...20 {
            handed += harness.spool.nextForReplay(limit: 1000, now: start.advanced(by: .milliseconds(100 * step)))
                .count
            harness.settle()
        }
        #expect(handed <= 200 + 10 && handed >= 180)
    }
}

@Suite("Spool group commit")
struct SpoolCommitTests {
    @Test func aCommitOfOnlyAcknowledgedRecordsSkipsTheFsync() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        // Commits only when the test asks (settle): with the test options' interval of 0 the writer commits as soon
        // as it wakes, which may fall between an append and its acknowledgement, and that commit is rightly real.
        var options = SpoolOptions.test(directory.path)
        options.fsyncIntervalMilliseconds = 3_600_000
        let harness = try SpoolHarness(options)
        defer { harness.close() }
        let key = try #require(harness.spool.streamKey("k"))
        for index in 0..<20 {
            if case .appended(let id) = harness.spool.append(key: key, topic: "t", message: [UInt8(index)],
                                                           inFlight: true) {
                harness.spool.acknowledge(id)
            }
        }
        harness.settle()
        var metrics = harness.spool.metrics
        #expect(metrics.commits == 0 && metrics.skippedCommits >= 1)
        #expect(metrics.durableSequence == nil)

        // One unacknowledged record makes the next commit real, and reports it durable.
        guard case .appended(let id) = harness.spool.append(key: key, topic: "t", message: [1]) else {
            Issue.record("append failed")
            return
        }
        harness.settle()
        metrics = harness.spool.metrics
        #expect(metrics.commits == 1 && metrics.durableSequence == id)
        #expect(metrics.fsyncs >= 1)
    }
}

@Suite("Spool segment release")
struct SpoolReleaseTests {
    /// In `always` mode a broker can acknowledge records before the writer has even created their segment; those
    /// segments must still be deleted once written, not orphaned.
    @Test func segmentsAcknowledgedBeforeTheWriterReachesThemAreStillDeleted() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let harness = try SpoolHarness(.test(directory.path, segmentBytes: 1024))
        defer { harness.close() }
        let key = try #require(harness.spool.streamKey("k"))
        let message = [UInt8](repeating: 0x43, count: 150)
        for _ in 0..<400 {
            if case .appended(let id) = harness.spool.append(key: key, topic: "t", message: message, inFlight: true) {
                harness.spool.acknowledge(id)
            }
        }
        harness.settle()
        harness.settle()
        #expect(harness.spool.metrics.segments == 1)
        #expect(directory.segments.count <= 1)
    }
}
