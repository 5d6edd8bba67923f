import E4
import Testing
import TestSupport

@Suite struct E4CaptureTests {
    /// Record: arrival 0x0102030405060708 µs as 08 07 06 05 04 03 02 01, characteristic 0x3EB3 as B3 3E,
    /// length 1 as 01 00, payload 0x53 (83 %).
    static let golden: [UInt8] = [
        0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0xB3, 0x3E, 0x01, 0x00, 0x53,
    ]

    /// Three records: battery, a 20-byte BVP packet, an empty control notification.
    static func sample() throws -> [UInt8] {
        var buffer: [UInt8] = []
        let battery: [UInt8] = [0x53]
        let bvp = [UInt8](0..<20)
        let empty: [UInt8] = []
        try E4Capture.append(arrivalMicros: 0x0102_0304_0506_0708, characteristic: 0x3EB3,
                             payload: battery.span.bytes, to: &buffer)
        try E4Capture.append(arrivalMicros: 2, characteristic: 0x3EA1, payload: bvp.span.bytes, to: &buffer)
        try E4Capture.append(arrivalMicros: 3, characteristic: 0x3EB2, payload: empty.span.bytes, to: &buffer)
        return buffer
    }

    @Test func writerMatchesGoldenRecord() throws {
        let buffer = try Self.sample()
        #expect(Array(buffer[0..<13]) == Self.golden)
        #expect(buffer.count == 13 + 32 + 12)
    }

    @Test func readerReturnsEveryRecord() throws {
        var reader = E4CaptureReader(bytes: try Self.sample())
        let first = try #require(try reader.next())
        #expect(first.arrivalMicros == 0x0102_0304_0506_0708)
        #expect(first.characteristic == 0x3EB3)
        #expect(first.stream == .battery)
        #expect(reader.withPayload(of: first) { span in span.byteCount } == 1)
        var battery = E4BatteryDecoder()
        let reading = try reader.withPayload(of: first) { (span) throws(E4DecodeError) in try battery.decode(span) }
        #expect(reading.percent == 83)
        let second = try #require(try reader.next())
        #expect(second.offset == 13 && second.payload == 25..<45 && second.stream == .bvp)
        let third = try #require(try reader.next())
        #expect(third.payload.isEmpty && third.stream == .tag)
        #expect(try reader.next() == nil)
        #expect(try reader.next() == nil)
    }

    /// nio's verifier idea: cut the capture at every byte; the records wholly before the cut are read, then
    /// the torn tail is reported at the offset of the record it cuts.
    @Test func everyTruncationReportsTheTornRecordsOffset() throws {
        let full = try Self.sample()
        let starts = [0, 13, 45]
        for cut in 0..<full.count {
            var reader = E4CaptureReader(bytes: Array(full[0..<cut]))
            var records = 0
            var failure: E4CaptureError?
            while true {
                do throws(E4CaptureError) {
                    guard try reader.next() != nil else { break }
                    records += 1
                } catch {
                    failure = error
                    break
                }
            }
            let whole = starts.filter { $0 < cut }.count - (starts.contains(cut) ? 0 : 1)
            let tornAt = starts[whole]
            if starts.contains(cut) {
                #expect(failure == nil, "cut \(cut)")
                #expect(records == whole, "cut \(cut)")
            } else {
                guard case .truncated(let offset, _, let available) = failure else {
                    Issue.record("cut \(cut): expected truncated, got \(String(describing: failure))")
                    continue
                }
                #expect(offset == tornAt && available == cut - tornAt, "cut \(cut)")
                #expect(records == whole, "cut \(cut)")
            }
        }
    }

    @Test func implausibleLengthIsABadLengthAtItsOffset() throws {
        var buffer = try Self.sample()
        buffer[13 + 10] = 0x01
        buffer[13 + 11] = 0x02  // length 0x0201 = 513
        var reader = E4CaptureReader(bytes: buffer)
        #expect(try reader.next() != nil)
        #expect(throws: E4CaptureError.badLength(offset: 13, length: 513)) { try reader.next() }
        #expect(try reader.next() == nil)
    }

    @Test func writerRejectsOversizedPayload() {
        var buffer: [UInt8] = [0xAA]
        let big = [UInt8](repeating: 0, count: 513)
        #expect(throws: E4CaptureError.payloadTooLong(length: 513)) {
            try E4Capture.append(arrivalMicros: 0, characteristic: 0x3EA1, payload: big.span.bytes, to: &buffer)
        }
        #expect(buffer == [0xAA])
    }

    @Test func offsetOutsideTheCaptureIsAnError() {
        let bytes: [UInt8] = [1, 2, 3]
        #expect(throws: E4CaptureError.offsetOutOfRange(offset: 4, size: 3)) {
            try E4Capture.record(in: bytes.span.bytes, at: 4)
        }
        #expect(throws: E4CaptureError.offsetOutOfRange(offset: -1, size: 3)) {
            try E4Capture.record(in: bytes.span.bytes, at: -1)
        }
    }

    @Test func randomGarbageNeverTraps() {
        var rng = SplitMix64(seed: 0xCA9)
        for _ in 0..<20_000 {
            var bytes = rng.bytes(count: Int.random(in: 0...200, using: &rng))
            // Small lengths now and then, so some garbage parses as records.
            if bytes.count >= 12 && Bool.random(using: &rng) { bytes[11] = 0; bytes[10] &= 0x1F }
            var reader = E4CaptureReader(bytes: bytes)
            var consumed = 0
            while true {
                do throws(E4CaptureError) {
                    guard let record = try reader.next() else {
                        #expect(consumed == bytes.count)
                        break
                    }
                    #expect(record.payload.upperBound <= bytes.count)
                    consumed = record.nextOffset
                    _ = reader.withPayload(of: record) { span in span.byteCount }
                } catch {
                    break
                }
            }
        }
    }
}
