#if canImport(Glibc)
import Glibc
#endif
import Posix
@testable import Spool
import Testing

/// Numbers no spool writes, in a damaged or planted directory (found by `make fuzz`, target `spool`; the inputs
/// are Fuzz/corpus/spool/crash-*): recovery and inspection trapped on `+ 1` overflows, so `empalinkd` could not
/// start (and systemd restarted it into the same trap) until someone emptied the spool by hand.
@Suite struct SpoolOutOfRangeTests {
    static func frame(_ sequence: UInt64) -> [UInt8] {
        let key = Array("dev0/bvp".utf8), topic = Array("P/a/dev0/bvp".utf8), message = testMessage(Int(sequence % 7))
        var bytes = [UInt8](repeating: 0, count: SpoolFrame.frameSize(keyCount: key.count, topicCount: topic.count,
                                                                      messageCount: message.count))
        bytes.withUnsafeMutableBytes { destination in
            key.withUnsafeBytes { key in
                topic.withUnsafeBytes { topic in
                    message.withUnsafeBytes { message in
                        _ = SpoolFrame.encode(into: destination, sequence: sequence, timestamp: 1_764_426_000_000,
                                              key: key, topic: topic, message: message, qos: 1, retain: false)
                    }
                }
            }
        }
        return bytes
    }

    @Test func aSegmentNamedWithTheLargestNumberIsNotASegment() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        overwrite(SpoolDirectory.segmentPath(directory.path, 3), with: Self.frame(0))
        overwrite(directory.path + "/18446744073709551615.seg", with: Self.frame(1))
        #expect(SpoolDirectory.segmentNumber(ofFileName: "18446744073709551615.seg") == nil)
        #expect(SpoolDirectory.segmentNumber(ofFileName: SpoolDirectory.segmentName(1 << 62)) == 1 << 62)
        let recovery = try SpoolRecovery.run(directory: directory.path)
        #expect(recovery.report.segments == 1)
        #expect(recovery.nextSegment == 4)
        #expect(recovery.records.map(\.sequence) == [0])
        #expect(try SpoolInspection.inspect(directory: directory.path).segments.map(\.number) == [3])
    }

    @Test func aFrameWithTheLargestSequenceIsDamageAndTheRestIsKept() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let planted = Self.frame(UInt64.max)
        overwrite(SpoolDirectory.segmentPath(directory.path, 1), with: Self.frame(0) + planted + Self.frame(1))
        overwrite(directory.path + "/" + SpoolLedger.fileName,
                  with: SpoolLedger(acknowledgedBelow: 0, acknowledged: [], nextSequence: 2).encoded())
        let recovery = try SpoolRecovery.run(directory: directory.path)
        #expect(recovery.records.map(\.sequence) == [0, 1])
        #expect(recovery.report.lostBytes == planted.count)
        #expect(recovery.nextSequence == 2)
        let inspection = try SpoolInspection.inspect(directory: directory.path)
        #expect(inspection.records == 2)
        #expect(inspection.missingRecords == 0)
    }

    @Test func aCursorBeyondTheLargestSequenceIsCorrupt() {
        let beyond = SpoolLedger(acknowledgedBelow: 0, acknowledged: [], nextSequence: UInt64.max).encoded()
        #expect(SpoolLedger.decode(beyond) == nil)
        let largest = SpoolLedger(acknowledgedBelow: 0, acknowledged: [], nextSequence: SpoolLedger.maximumSequence)
        #expect(SpoolLedger.decode(largest.encoded()) == largest)
    }
}
