@testable import Spool
import Testing
import TestSupport

@Suite("Spool framing and the recovery scanner")
struct SpoolScanTests {
    /// Frames `count` records with varied sizes into one buffer; returns it with each frame's range.
    static func segment(records count: Int, seed: UInt64 = 1) -> (bytes: [UInt8], frames: [Range<Int>]) {
        var generator = SplitMix64(seed: seed)
        var bytes: [UInt8] = []
        var frames: [Range<Int>] = []
        for index in 0..<count {
            let key = Array("dev\(index % 3)/bvp".utf8)
            let topic = Array("empalink/a/dev\(index % 3)/bvp".utf8)
            let message = (0..<Int(generator.next() % 90)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            let size = SpoolFrame.frameSize(keyCount: key.count, topicCount: topic.count, messageCount: message.count)
            var frame = [UInt8](repeating: 0, count: size)
            frame.withUnsafeMutableBytes { destination in
                key.withUnsafeBytes { keyRaw in
                    topic.withUnsafeBytes { topicRaw in
                        message.withUnsafeBytes { messageRaw in
                            _ = SpoolFrame.encode(
                                into: destination, sequence: UInt64(100 + index), timestamp: Int64(index) * 1000,
                                key: keyRaw, topic: topicRaw, message: messageRaw, qos: 1, retain: index % 5 == 0
                            )
                        }
                    }
                }
            }
            frames.append(bytes.count..<(bytes.count + size))
            bytes += frame
        }
        return (bytes, frames)
    }

    @Test func encodedFramesDecodeToTheirFields() throws {
        let (bytes, frames) = Self.segment(records: 20)
        let scan = bytes.withUnsafeBytes { SpoolScan.scan($0) }
        #expect(scan.records.count == 20 && scan.damaged.isEmpty && scan.tail == nil && scan.validEnd == bytes.count)
        #expect(scan.records.map { $0.offset..<($0.offset + $0.frameSize) } == frames)
        #expect(scan.records.map(\.sequence) == (0..<20).map { UInt64(100 + $0) })
        #expect(scan.records.map(\.retain) == (0..<20).map { $0 % 5 == 0 })
        let first = try #require(scan.records.first)
        #expect(String(decoding: bytes[first.keyRange], as: UTF8.self) == "dev0/bvp")
        #expect(String(decoding: bytes[first.topicRange], as: UTF8.self) == "empalink/a/dev0/bvp")
    }

    /// The decoder-verifier idea: a segment cut at every offset yields exactly the frames wholly before the cut,
    /// and the rest as a tail; nothing in the middle is called damaged, and nothing traps.
    @Test func aSegmentCutAtEveryOffsetKeepsEveryWholeFrameAndReportsTheRestAsTail() {
        let (bytes, frames) = Self.segment(records: 12, seed: 3)
        for cut in 0...bytes.count {
            let scan = bytes.withUnsafeBytes { SpoolScan.scan(UnsafeRawBufferPointer(rebasing: $0[0..<cut])) }
            let whole = frames.filter { $0.upperBound <= cut }
            let validEnd = whole.last?.upperBound ?? 0
            #expect(scan.records.count == whole.count, "cut at \(cut)")
            #expect(scan.validEnd == validEnd, "cut at \(cut)")
            #expect(scan.damaged.isEmpty, "cut at \(cut)")
            #expect(scan.tail == (validEnd < cut ? validEnd..<cut : nil), "cut at \(cut)")
        }
    }

    /// Every single flipped bit costs exactly the frame it lands in; the scanner resynchronises on the next one.
    @Test func aFlippedBitLosesOnlyItsOwnFrame() {
        let (original, frames) = Self.segment(records: 6, seed: 5)
        for position in 0..<original.count {
            for bit in [0, 7] {
                var bytes = original
                bytes[position] ^= UInt8(1 << bit)
                let scan = bytes.withUnsafeBytes { SpoolScan.scan($0) }
                let hit = frames.firstIndex { $0.contains(position) } ?? -1
                let expected = frames.indices.filter { $0 != hit }.map { frames[$0] }
                let found = scan.records.map { $0.offset..<($0.offset + $0.frameSize) }
                #expect(found == expected, "bit \(bit) of byte \(position)")
                #expect(scan.lostBytes == frames[hit].count, "bit \(bit) of byte \(position)")
            }
        }
    }

    @Test func garbageScansWithoutTrappingAndYieldsNothing() {
        var generator = SplitMix64(seed: 11)
        for length in [0, 1, 3, 4, 11, 12, 35, 36, 37, 1000, 65_536] {
            var bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            // Sprinkle magic numbers with plausible and absurd lengths.
            var index = 0
            while index + 8 < length {
                bytes[index] = 0x45; bytes[index + 1] = 0x53; bytes[index + 2] = 0x52; bytes[index + 3] = 0x31
                index += 97
            }
            let scan = bytes.withUnsafeBytes { SpoolScan.scan($0) }
            #expect(scan.records.isEmpty && scan.lostBytes == length)
        }
    }

    @Test func ledgerRoundTripsAndRejectsDamage() throws {
        let ledger = SpoolLedger(acknowledgedBelow: 10, acknowledged: [12, 15, 99], nextSequence: 120)
        let bytes = ledger.encoded()
        #expect(SpoolLedger.decode(bytes) == ledger)
        #expect(ledger.isAcknowledged(9) && !ledger.isAcknowledged(10) && ledger.isAcknowledged(15))
        for position in bytes.indices {
            var damaged = bytes
            damaged[position] ^= 0x10
            #expect(SpoolLedger.decode(damaged) == nil, "byte \(position)")
        }
        for cut in 0..<bytes.count {
            #expect(SpoolLedger.decode(Array(bytes[0..<cut])) == nil, "cut at \(cut)")
        }
    }
}
