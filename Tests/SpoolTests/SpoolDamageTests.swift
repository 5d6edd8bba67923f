#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import Posix
@testable import Spool
import Testing
import TestSupport

/// The acceptance test of SPEC §11's recovery promise, at module level: a spool damaged 200 ways opens every
/// time, delivers every intact record, and reports what was lost.
@Suite("Spool recovery from damage")
struct SpoolDamageTests {
    /// One record as the pristine spool holds it.
    struct Truth {
        var id: UInt64
        var message: [UInt8]
        var segment: UInt64
        var range: Range<Int>
        var acknowledged: Bool
    }

    enum Damage: CaseIterable {
        case truncate, flipBytes, deleteSegment, corruptCursor, everything
    }

    /// Builds the pristine spool once: 160 records over several segments, about a third acknowledged.
    static func makePristine(_ directory: String) throws -> [Truth] {
        let harness = try SpoolHarness(.test(directory, segmentBytes: 2048))
        let keys = try (0..<4).map { try #require(harness.spool.streamKey("dev\($0)/bvp")) }
        var messages: [UInt64: [UInt8]] = [:]
        var generator = SplitMix64(seed: 2024)
        for index in 0..<160 {
            let message = testMessage(index)
            if case .appended(let id) = harness.spool.append(
                key: keys[index % 4], topic: "empalink/a/dev\(index % 4)/bvp", message: message
            ) {
                messages[id] = message
            }
        }
        harness.settle()
        var acknowledged = Set<UInt64>()
        for record in harness.replayAll(acknowledge: false) where generator.next() % 3 == 0 {
            harness.spool.acknowledge(record.id)
            acknowledged.insert(record.id)
        }
        harness.close()
        // Where each surviving record lives on disk.
        var truths: [Truth] = []
        for number in try SpoolDirectory.segmentNumbers(in: directory) {
            let bytes = contents(SpoolDirectory.segmentPath(directory, number))
            let scan = bytes.withUnsafeBytes { SpoolScan.scan($0) }
            #expect(scan.lostBytes == 0)
            for header in scan.records {
                truths.append(Truth(
                    id: header.sequence, message: messages[header.sequence] ?? [], segment: number,
                    range: header.offset..<(header.offset + header.frameSize),
                    acknowledged: acknowledged.contains(header.sequence)
                ))
            }
        }
        return truths
    }

    static func copyDirectory(_ source: String, to destination: String) {
        for name in (try? FileSystem.contentsOfDirectory(source)) ?? [] {
            overwrite(destination + "/" + name, with: contents(source + "/" + name))
        }
    }

    @Test func aSpoolDamaged200WaysOpensDeliversEveryIntactRecordAndReportsTheLoss() throws {
        let pristine = TemporaryDirectory("spool-pristine")
        defer { pristine.remove() }
        let truths = try Self.makePristine(pristine.path)
        let segments = Array(Set(truths.map(\.segment))).sorted()
        try #require(segments.count >= 4 && truths.contains { $0.acknowledged } && truths.contains { !$0.acknowledged })
        var generator = SplitMix64(seed: 0x5EED)
        var damagedTrials = 0
        for trial in 0..<200 {
            let directory = TemporaryDirectory("spool-damaged")
            defer { directory.remove() }
            Self.copyDirectory(pristine.path, to: directory.path)
            let damage = Damage.allCases[trial % Damage.allCases.count]
            // Which (segment, byte) ranges were destroyed, and whether the cursor is still trusted.
            var cutAt: [UInt64: Int] = [:]
            var flipped: [UInt64: [Int]] = [:]
            var deleted: Set<UInt64> = []
            var cursorCorrupted = false
            func pick() -> UInt64 { segments[Int(generator.next() % UInt64(segments.count))] }
            func size(_ number: UInt64) -> Int { contents(SpoolDirectory.segmentPath(directory.path, number)).count }
            if damage == .truncate || damage == .everything {
                let number = pick()
                let offset = Int(generator.next() % UInt64(max(size(number), 1)))
                let path = SpoolDirectory.segmentPath(directory.path, number)
                overwrite(path, with: Array(contents(path).prefix(offset)))
                cutAt[number] = offset
            }
            if damage == .flipBytes || damage == .everything {
                for _ in 0..<(1 + Int(generator.next() % 6)) {
                    let number = pick()
                    let path = SpoolDirectory.segmentPath(directory.path, number)
                    var bytes = contents(path)
                    guard !bytes.isEmpty else { continue }
                    let position = Int(generator.next() % UInt64(bytes.count))
                    bytes[position] ^= UInt8(1 + generator.next() % 255)
                    overwrite(path, with: bytes)
                    flipped[number, default: []].append(position)
                }
            }
            if damage == .deleteSegment || damage == .everything {
                let number = pick()
                try? FileSystem.removeFile(SpoolDirectory.segmentPath(directory.path, number))
                deleted.insert(number)
            }
            if damage == .corruptCursor || damage == .everything {
                let path = directory.path + "/" + SpoolLedger.fileName
                var bytes = contents(path)
                switch generator.next() % 3 {
                case 0: bytes = Array(bytes.prefix(Int(generator.next() % UInt64(max(bytes.count, 1)))))
                case 1: if !bytes.isEmpty { bytes[Int(generator.next() % UInt64(bytes.count))] ^= 0xFF }
                default: bytes = (0..<40).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
                }
                overwrite(path, with: bytes)
                cursorCorrupted = true
            }
            func intact(_ truth: Truth) -> Bool {
                if deleted.contains(truth.segment) { return false }
                if let cut = cutAt[truth.segment], truth.range.upperBound > cut { return false }
                return !(flipped[truth.segment] ?? []).contains { truth.range.contains($0) }
            }
            let survivors = truths.filter(intact)
            let expected = survivors.filter { cursorCorrupted || !$0.acknowledged }
            let destroyedPending = truths.contains { !intact($0) && !$0.acknowledged }

            let harness = try SpoolHarness(.test(directory.path, segmentBytes: 2048))
            let report = harness.spool.recovery
            let delivered = harness.replayAll()
            harness.close()

            let deliveredIDs = delivered.map(\.id)
            let expectedIDs = expected.map(\.id)
            #expect(deliveredIDs == expectedIDs, "trial \(trial) (\(damage))")
            let messagesMatch = delivered.map(\.message) == expected.map(\.message)
            #expect(messagesMatch, "trial \(trial) (\(damage)): a delivered message differs from what was appended")
            if cursorCorrupted {
                #expect(report.cursor == .corrupt || report.cursor == .missing, "trial \(trial)")
            }
            if destroyedPending {
                damagedTrials += 1
                #expect(report.isDamaged, "trial \(trial) (\(damage)): lost records not reported: \(report.summary)")
            }
            if !flipped.isEmpty && survivors.count < truths.count - deleted.count {
                #expect(report.lostBytes > 0 || report.missingRecords > 0, "trial \(trial)")
            }
        }
        // The seed must actually exercise loss, or the test proves nothing.
        #expect(damagedTrials > 100)
    }

    @Test func anEmptyOrForeignDirectoryOpensClean() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        overwrite(directory.path + "/README", with: Array("not a segment".utf8))
        overwrite(directory.path + "/" + SpoolDirectory.segmentName(3), with: [])
        let harness = try SpoolHarness(.test(directory.path + "/nested/spool"))
        defer { harness.close() }
        #expect(harness.spool.recovery.records == 0 && !harness.spool.recovery.isDamaged)
        let reopened = try Spool(options: .test(directory.path), eventLoop: harness.loop)
        #expect(reopened.recovery.segments == 1 && reopened.recovery.records == 0)
        #expect(reopened.recovery.deletedSegments == 1)
        reopened.close()
    }
}
