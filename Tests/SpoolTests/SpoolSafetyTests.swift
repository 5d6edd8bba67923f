#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import Posix
@testable import Spool
import Testing

/// Issue 23: what an operator's first install and an attacker's afternoon found in the spool's handling of its
/// directory: planted links, a second instance, paths that are not what they should be, write errors nobody saw.
@Suite("Spool directory safety")
struct SpoolSafetyTests {
    /// Writes `count` records and closes the spool, leaving them pending on disk.
    static func writeRecords(_ directory: String, count: Int = 20) throws {
        let harness = try SpoolHarness(.test(directory))
        let key = try #require(harness.spool.streamKey("dev0/bvp"))
        for index in 0..<count {
            _ = harness.spool.append(key: key, topic: "empalink/a/dev0/bvp", message: testMessage(index))
        }
        harness.settle()
        harness.close()
    }

    /// A file outside the spool that a planted link points at.
    static func makeVictim(_ path: String) -> [UInt8] {
        let bytes = Array("precious operator data that must survive\n".utf8)
        overwrite(path, with: bytes)
        return bytes
    }

    static func isSymbolicLink(_ path: String) -> Bool {
        (try? FileStatus.of(path))?.kind == .symbolicLink
    }

    @Test func recoveryLeavesASymlinkedSegmentAndItsTargetAlone() throws {
        let directory = TemporaryDirectory()
        let outside = TemporaryDirectory("spool-victim")
        defer {
            directory.remove()
            outside.remove()
        }
        try Self.writeRecords(directory.path)
        let victim = outside.path + "/victim"
        let original = Self.makeVictim(victim)
        let link = SpoolDirectory.segmentPath(directory.path, 9)
        #expect(symlink(victim, link) == 0)

        let harness = try SpoolHarness(.test(directory.path))
        let report = harness.spool.recovery
        harness.close()

        #expect(contents(victim) == original, "recovery truncated the link's target")
        #expect(Self.isSymbolicLink(link), "recovery deleted the link")
        #expect(report.skippedFiles == ["00000000000000000009.seg (symbolic link)"])
        #expect(report.isDamaged)
        #expect(report.summary.contains("1 not regular files, left alone: 00000000000000000009.seg"))
        #expect(report.pendingRecords == 20, "the real segment's records are still recovered")
        #expect(report.lostBytes == 0 && report.truncatedBytes == 0)

        // `empalinkctl spool inspect` does not follow it either: the name is listed as unreadable.
        let inspection = try SpoolInspection.inspect(directory: directory.path)
        #expect(inspection.segments.first(where: { $0.number == 9 })?.unreadable == true)
        #expect(inspection.records == 20)
    }

    @Test func recoveryLeavesAHardLinkedSegmentAlone() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        try Self.writeRecords(directory.path)
        let other = directory.path + "/not-a-segment"
        let original = Self.makeVictim(other)
        let link = SpoolDirectory.segmentPath(directory.path, 9)
        #expect(Glibc.link(other, link) == 0)

        let harness = try SpoolHarness(.test(directory.path))
        let report = harness.spool.recovery
        harness.close()

        #expect(contents(other) == original)
        #expect((try? FileStatus.of(link))?.links == 2)
        #expect(report.skippedFiles == ["00000000000000000009.seg (regular file with 2 links)"])
    }

    @Test func aSymlinkedCursorIsNotFollowedAndReportedUnreadable() throws {
        let directory = TemporaryDirectory()
        let outside = TemporaryDirectory("spool-victim")
        defer {
            directory.remove()
            outside.remove()
        }
        let victim = outside.path + "/victim"
        let original = Self.makeVictim(victim)
        #expect(symlink(victim, directory.path + "/" + SpoolLedger.fileName) == 0)

        let harness = try SpoolHarness(.test(directory.path))
        let report = harness.spool.recovery
        harness.close()

        #expect(report.cursor == .unreadable)
        #expect(report.cursorProblem == "a symbolic link, not followed")
        #expect(report.summary.contains("cursor unreadable (a symbolic link, not followed)"))
        #expect(contents(victim) == original)
    }

    @Test func aSecondSpoolOnTheSameDirectoryIsRefusedUntilTheFirstCloses() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        try Self.writeRecords(directory.path)
        let first = try SpoolHarness(.test(directory.path))
        let segments = directory.segments
        let sizes = segments.map { contents(SpoolDirectory.segmentPath(directory.path, $0)).count }
        #expect(throws: SpoolError.self) { _ = try Spool(options: .test(directory.path), eventLoop: first.loop) }
        do {
            _ = try Spool(options: .test(directory.path), eventLoop: first.loop)
        } catch {
            #expect(error.code == .locked)
            #expect(error.description.contains("is in use by another process"))
        }
        // The refused open touched nothing.
        #expect(directory.segments == segments)
        #expect(segments.map { contents(SpoolDirectory.segmentPath(directory.path, $0)).count } == sizes)
        first.spool.close()
        first.pump()
        let second = try Spool(options: .test(directory.path), eventLoop: first.loop)
        #expect(second.recovery.pendingRecords == 20)
        second.close()
        first.close()
    }

    @Test func aSpoolPathThatIsAFileIsReportedAsNotADirectory() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.path + "/spool"
        overwrite(file, with: [1, 2, 3])
        let loop = try EventLoop()
        defer { loop.close() }
        for path in [file, file + "/below"] {
            do {
                _ = try Spool(options: .test(path), eventLoop: loop)
                Issue.record("a spool opened on \(path)")
            } catch {
                #expect(error.code == .directory)
                #expect(!error.description.contains("File exists"), "\(error)")
                #expect(error.description.contains("not a directory") || error.description.contains("Not a directory"),
                        "\(error)")
            }
        }
        #expect(contents(file) == [1, 2, 3])
    }

    @Test func aSpoolPathThatIsADanglingLinkSaysSo() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/spool"
        #expect(symlink(directory.path + "/nowhere", path) == 0)
        let loop = try EventLoop()
        defer { loop.close() }
        do {
            _ = try Spool(options: .test(path), eventLoop: loop)
            Issue.record("a spool opened on a dangling link")
        } catch {
            #expect(error.description == "spool directory path \(path) is a symbolic link to nothing: "
                        + "No such file or directory")
        }
    }

    @Test func aCursorThatIsAnEmptyDirectoryIsReportedAndRepaired() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        try Self.writeRecords(directory.path)
        let cursor = directory.path + "/" + SpoolLedger.fileName
        try? FileSystem.removeFile(cursor)
        #expect(mkdir(cursor, 0o700) == 0)

        let harness = try SpoolHarness(.test(directory.path))
        var lines: [String] = []
        harness.spool.onWriteError = { lines.append($0) }
        #expect(harness.spool.recovery.cursor == .unreadable)
        #expect(harness.spool.recovery.cursorProblem == "a directory, not a file")
        for record in harness.replayAll(acknowledge: true) { _ = record }
        harness.settle()
        harness.close()

        #expect(lines.isEmpty, "\(lines)")
        guard case .valid(let ledger) = SpoolLedger.read(directory: directory.path) else {
            Issue.record("the cursor was not rewritten as a file")
            return
        }
        #expect(ledger.acknowledgedBelow == 20)
    }

    @Test func aCursorBlockedByAFullDirectoryIsLoggedOnceNotPerAttempt() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        try Self.writeRecords(directory.path)
        let cursor = directory.path + "/" + SpoolLedger.fileName
        try? FileSystem.removeFile(cursor)
        #expect(mkdir(cursor, 0o700) == 0)
        overwrite(cursor + "/keep", with: [1])

        let harness = try SpoolHarness(.test(directory.path))
        var lines: [String] = []
        harness.spool.onWriteError = { lines.append($0) }
        let records = harness.replayAll(acknowledge: false)
        for record in records {
            harness.spool.acknowledge(record.id)
            harness.settle()  // a ledger write, and its failure, per acknowledgement
        }
        harness.close()

        #expect(records.count == 20)
        #expect(harness.spool.metrics.otherWriteErrors >= 5)
        #expect(lines.count == 1, "\(lines)")
        #expect(lines.first?.contains("writing the cursor \(cursor) failed (a non-empty directory is in the way: "
                                          + "move it): Is a directory") == true, "\(lines)")
        #expect(contents(cursor + "/keep") == [1], "the directory's contents are not ours to delete")
        _ = unlink(cursor + "/keep")
    }

    @Test func writeErrorsReachTheLogRateLimited() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let harness = try SpoolHarness(.test(directory.path))
        var lines: [String] = []
        harness.spool.onWriteError = { lines.append($0) }
        let key = try #require(harness.spool.streamKey("dev0/bvp"))
        harness.spool.writer.injectedWriteError.store(EIO, ordering: .relaxed)
        for index in 0..<5 {
            _ = harness.spool.append(key: key, topic: "empalink/a/dev0/bvp", message: testMessage(index))
            harness.settle()
        }
        harness.spool.writer.injectedWriteError.store(0, ordering: .relaxed)
        harness.close()
        #expect(harness.spool.metrics.ioErrors == 5)
        #expect(lines.count == 1, "\(lines)")
        #expect(lines.first == "spool \(directory.path): writing spool segment 00000000000000000001.seg failed: "
                    + "Input/output error; 1 records lost")
    }
}
