import CZlib

/// The on-disk framing of one spool record (see Docs/spool.md).
///
/// All integers are little-endian:
///
/// | offset | size | field |
/// | --- | --- | --- |
/// | 0 | 4 | magic `ESR1` |
/// | 4 | 4 | body length *n* |
/// | 8 | 4 | CRC-32 (zlib) of the 4 length bytes followed by the body |
/// | 12 | 8 | body: sequence number (the record's id) |
/// | 20 | 8 | body: append time, microseconds since 1970 |
/// | 28 | 2 | body: stream key length *k* |
/// | 30 | 2 | body: topic length *t* |
/// | 32 | 1 | body: QoS |
/// | 33 | 1 | body: flags (bit 0: retain) |
/// | 34 | 2 | body: reserved, 0 |
/// | 36 | *k* + *t* + *m* | body: stream key, topic, message |
///
/// The CRC covers the length so that a flipped length bit cannot make the reader skip valid records silently.
public enum SpoolFrame {
    /// "ESR1" read as a little-endian `UInt32`.
    public static let magic: UInt32 = 0x3152_5345
    /// Magic, length, CRC.
    public static let headerSize = 12
    /// The fixed part of the body before key, topic and message.
    public static let bodyFixedSize = 24
    /// Everything a record costs besides key, topic and message.
    public static let overhead = Self.headerSize + Self.bodyFixedSize
    /// The largest message accepted: larger ones are refused at append, so the reader's buffers stay bounded
    /// and a corrupt length field cannot make it read gigabytes.
    public static let maxMessageSize = 1 << 20
    /// The largest body a valid frame can have.
    public static let maxBodySize = Self.bodyFixedSize + 2 * Int(UInt16.max) + Self.maxMessageSize
    /// The largest frame.
    public static let maxFrameSize = Self.headerSize + Self.maxBodySize

    /// The fields of a validated frame; key, topic and message are byte ranges of the buffer it was read from.
    public struct Header: Equatable, Sendable {
        /// Where the frame starts in its buffer.
        public var offset: Int
        /// The whole frame's size, header included.
        public var frameSize: Int
        public var sequence: UInt64
        public var timestamp: Int64
        public var qos: UInt8
        public var retain: Bool
        public var keyRange: Range<Int>
        public var topicRange: Range<Int>
        public var messageRange: Range<Int>
    }

    /// What ``decode(_:at:)`` found at an offset.
    public enum Decoded: Equatable, Sendable {
        /// A whole frame whose magic, length and CRC are valid.
        case valid(Header)
        /// A plausible start whose frame runs past the end of the buffer (a torn tail, or read more).
        /// `needed` is the whole frame's size.
        case incomplete(needed: Int)
        /// Not a valid frame start.
        case invalid
    }

    /// The frame size for a record with these field sizes.
    @inlinable
    public static func frameSize(keyCount: Int, topicCount: Int, messageCount: Int) -> Int {
        Self.overhead + keyCount + topicCount + messageCount
    }

    /// Writes one frame into `destination` (which must hold ``frameSize(keyCount:topicCount:messageCount:)``
    /// bytes) and returns its size.
    @discardableResult
    public static func encode(
        into destination: UnsafeMutableRawBufferPointer,
        sequence: UInt64,
        timestamp: Int64,
        key: UnsafeRawBufferPointer,
        topic: UnsafeRawBufferPointer,
        message: UnsafeRawBufferPointer,
        qos: UInt8,
        retain: Bool
    ) -> Int {
        let size = Self.frameSize(keyCount: key.count, topicCount: topic.count, messageCount: message.count)
        precondition(destination.count >= size, "SpoolFrame.encode: destination too small")
        let bodyLength = size - Self.headerSize
        destination.storeBytes(of: Self.magic.littleEndian, toByteOffset: 0, as: UInt32.self)
        destination.storeBytes(of: UInt32(bodyLength).littleEndian, toByteOffset: 4, as: UInt32.self)
        destination.storeBytes(of: sequence.littleEndian, toByteOffset: 12, as: UInt64.self)
        destination.storeBytes(of: timestamp.littleEndian, toByteOffset: 20, as: Int64.self)
        destination.storeBytes(of: UInt16(key.count).littleEndian, toByteOffset: 28, as: UInt16.self)
        destination.storeBytes(of: UInt16(topic.count).littleEndian, toByteOffset: 30, as: UInt16.self)
        destination.storeBytes(of: qos, toByteOffset: 32, as: UInt8.self)
        destination.storeBytes(of: retain ? 1 : 0, toByteOffset: 33, as: UInt8.self)
        destination.storeBytes(of: UInt16(0), toByteOffset: 34, as: UInt16.self)
        // Three calls rather than a loop over an array literal, which would allocate on the append path.
        var offset = Self.overhead
        Self.copy(key, into: destination, at: &offset)
        Self.copy(topic, into: destination, at: &offset)
        Self.copy(message, into: destination, at: &offset)
        let crc = Self.checksum(UnsafeRawBufferPointer(rebasing: destination[4..<size]))
        destination.storeBytes(of: crc.littleEndian, toByteOffset: 8, as: UInt32.self)
        return size
    }

    /// Validates the frame starting at `offset`.
    ///
    /// - Complexity: O(frame size) for the CRC; O(1) to reject a non-frame.
    public static func decode(_ buffer: UnsafeRawBufferPointer, at offset: Int) -> Decoded {
        let available = buffer.count - offset
        guard available >= 4 else {
            return Self.magicPrefixMatches(buffer, at: offset) ? .incomplete(needed: Self.overhead) : .invalid
        }
        guard UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt32.self)) == Self.magic else {
            return .invalid
        }
        guard available >= 8 else { return .incomplete(needed: Self.overhead) }
        let bodyLength = Int(UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)))
        guard bodyLength >= Self.bodyFixedSize, bodyLength <= Self.maxBodySize else { return .invalid }
        let frameSize = Self.headerSize + bodyLength
        guard available >= frameSize else { return .incomplete(needed: frameSize) }
        let stored = UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self))
        let computed = Self.checksum(
            UnsafeRawBufferPointer(rebasing: buffer[(offset + 4)..<(offset + frameSize)])
        )
        guard stored == computed else { return .invalid }
        let body = offset + Self.headerSize
        let keyCount = Int(UInt16(littleEndian: buffer.loadUnaligned(fromByteOffset: body + 16, as: UInt16.self)))
        let topicCount = Int(UInt16(littleEndian: buffer.loadUnaligned(fromByteOffset: body + 18, as: UInt16.self)))
        guard Self.bodyFixedSize + keyCount + topicCount <= bodyLength else { return .invalid }
        let keyStart = offset + Self.overhead
        let topicStart = keyStart + keyCount
        let messageStart = topicStart + topicCount
        return .valid(Header(
            offset: offset,
            frameSize: frameSize,
            sequence: UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: body, as: UInt64.self)),
            timestamp: Int64(littleEndian: buffer.loadUnaligned(fromByteOffset: body + 8, as: Int64.self)),
            qos: buffer[body + 20],
            retain: buffer[body + 21] & 1 != 0,
            keyRange: keyStart..<topicStart,
            topicRange: topicStart..<messageStart,
            messageRange: messageStart..<(offset + frameSize)
        ))
    }

    /// CRC-32 of the length field followed by the body; `bytes` starts at the length field, and the 4 CRC bytes
    /// after it are skipped.
    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count >= 8 else { return 0 }
        let pointer = base.assumingMemoryBound(to: UInt8.self)
        var crc = crc32(0, pointer, 4)
        crc = crc32(crc, pointer + 8, uInt(bytes.count - 8))
        return UInt32(truncatingIfNeeded: crc)
    }

    private static func copy(
        _ part: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer, at offset: inout Int
    ) {
        guard part.count > 0 else { return }
        UnsafeMutableRawBufferPointer(rebasing: destination[offset..<(offset + part.count)]).copyMemory(from: part)
        offset += part.count
    }

    /// Whether the bytes left at `offset` (fewer than 4) are a prefix of the magic: a tail torn inside it.
    static func magicPrefixMatches(_ buffer: UnsafeRawBufferPointer, at offset: Int) -> Bool {
        var magic = Self.magic.littleEndian
        return withUnsafeBytes(of: &magic) { magicBytes in
            var index = 0
            while offset + index < buffer.count {
                if buffer[offset + index] != magicBytes[index] { return false }
                index += 1
            }
            return true
        }
    }
}
