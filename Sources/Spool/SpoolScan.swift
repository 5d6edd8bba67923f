/// The result of scanning one segment's bytes for valid frames: the recovery scanner, also used by
/// `empalinkctl spool verify` and the replay reader.
///
/// Pure and total: any bytes scan without trapping. A region that does not validate (magic, length, CRC) is
/// skipped byte by byte until the next offset where a whole valid frame starts, so one flipped bit costs one
/// record, not the rest of the segment.
public struct SpoolScan: Equatable, Sendable {
    /// The valid frames, in file order.
    public var records: [SpoolFrame.Header] = []
    /// Corrupt regions between valid frames, skipped.
    public var damaged: [Range<Int>] = []
    /// Bytes after the last valid frame that are not a valid frame: a torn write (power cut mid-append) or
    /// garbage. Recovery truncates them.
    public var tail: Range<Int>?
    /// The end of the last valid frame (0 when there is none).
    public var validEnd = 0

    /// Bytes that belong to no valid frame: damaged regions plus the tail.
    public var lostBytes: Int {
        self.damaged.reduce(0) { $0 + $1.count } + (self.tail?.count ?? 0)
    }

    /// Scans `buffer` from its start.
    ///
    /// - Complexity: O(n) for intact data; a corrupt region costs one O(1) check per byte plus a CRC per magic
    ///   number found inside it.
    public static func scan(_ buffer: UnsafeRawBufferPointer) -> SpoolScan {
        var result = SpoolScan()
        var offset = 0
        var damageStart: Int?
        while offset < buffer.count {
            if case .valid(let header) = SpoolFrame.decode(buffer, at: offset) {
                if let start = damageStart {
                    result.damaged.append(start..<offset)
                    damageStart = nil
                }
                result.records.append(header)
                offset += header.frameSize
                result.validEnd = offset
            } else {
                // Incomplete counts as invalid here: only the end of the buffer tells a torn tail from a corrupt
                // length field, and both are skipped the same way.
                if damageStart == nil { damageStart = offset }
                offset = Self.nextMagicCandidate(buffer, after: offset)
            }
        }
        if let start = damageStart {
            result.tail = start..<buffer.count
        }
        return result
    }

    /// The next offset after `offset` whose first byte is the magic's first byte, or the end of the buffer
    /// (inside the last 3 bytes, a torn magic still matches as a candidate).
    static func nextMagicCandidate(_ buffer: UnsafeRawBufferPointer, after offset: Int) -> Int {
        let first = UInt8(truncatingIfNeeded: SpoolFrame.magic)
        var index = offset + 1
        while index < buffer.count && buffer[index] != first { index += 1 }
        return index
    }
}
