import EventLoop
import Posix
@testable import Spool
import Testing

@Suite("Spool inspection (empalinkctl spool inspect|verify)")
struct SpoolInspectionTests {
    @Test func inspectionOfAWrittenSpoolMatchesWhatWasAppendedAndAcknowledged() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let harness = try SpoolHarness(.test(directory.path, segmentBytes: 1024))
        let keys = try ["a/bvp", "b/gsr"].map { try #require(harness.spool.streamKey($0)) }
        for index in 0..<40 {
            harness.spool.append(key: keys[index % 2], topic: "t", message: testMessage(index),
                                 timestamp: 1_000_000 * Int64(index))
        }
        harness.settle()
        for record in harness.replayAll(acknowledge: false) where record.id >= 30 {
            harness.spool.acknowledge(record.id)
        }
        harness.close()
        let inspection = try SpoolInspection.inspect(directory: directory.path)
        #expect(!inspection.isDamaged && inspection.cursor == .valid)
        #expect(inspection.records == 40 && inspection.pending == 30)
        #expect(inspection.oldest?.sequence == 0 && inspection.newest?.timestamp == 39_000_000)
        #expect(inspection.streams.map(\.key) == ["a/bvp", "b/gsr"] && inspection.streams.map(\.records) == [20, 20])
        #expect(inspection.ledger?.nextSequence == 40)
    }

    @Test func inspectionChangesNothingAndSeesATornTail() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let harness = try SpoolHarness(.test(directory.path))
        let key = try #require(harness.spool.streamKey("k"))
        for index in 0..<5 { harness.spool.append(key: key, topic: "t", message: testMessage(index)) }
        harness.close()
        let path = SpoolDirectory.segmentPath(directory.path, try #require(directory.segments.last))
        let torn = Array(contents(path).dropLast(3))
        overwrite(path, with: torn)
        let inspection = try SpoolInspection.inspect(directory: directory.path)
        #expect(inspection.isDamaged && inspection.records == 4 && inspection.lostBytes > 0)
        #expect(contents(path) == torn)
    }
}
