/// Inline storage for one encoded notification or command (at most 20 bytes): what the encoders write into.
///
/// A value type with no heap storage, so a simulator can keep one per stream and encode every packet into it
/// without allocating. Hand the bytes on with ``withUnsafeBytes(_:)`` (for `write(2)`) or ``withBytes(_:)``.
public struct E4PacketBytes: Sendable {
    /// The most bytes any E4 packet has: the 20-byte sensor packets.
    public static let capacity = 20

    private var storage: InlineArray<20, UInt8>
    /// The number of valid bytes, 0…``capacity``.
    public private(set) var count: Int

    /// An empty packet.
    public init() {
        self.storage = InlineArray(repeating: 0)
        self.count = 0
    }

    /// A packet holding the first (at most ``capacity``) bytes of `bytes`; test and replay convenience.
    public init(_ bytes: some Sequence<UInt8>) {
        self.init()
        for byte in bytes {
            guard self.count < Self.capacity else { break }
            self.storage[self.count] = byte
            self.count += 1
        }
    }

    /// The byte at `index`. Reading at or past ``count`` returns 0 and writing there is ignored, so a test or a
    /// fault injector cannot trap the process with a bad index.
    public subscript(index: Int) -> UInt8 {
        get { (0..<self.count).contains(index) ? self.storage[index] : 0 }
        set { if (0..<self.count).contains(index) { self.storage[index] = newValue } }
    }

    /// Sets the length to `count` (clamped to 0…``capacity``) with every byte zero; encoders start here.
    mutating func reset(count: Int) {
        self.count = min(max(count, 0), Self.capacity)
        for index in 0..<Self.capacity { self.storage[index] = 0 }
    }

    /// Writes a byte the encoder knows is in range.
    @inline(__always)
    mutating func set(_ index: Int, _ byte: UInt8) {
        self.storage[index] = byte
    }

    /// Reads a byte the encoder knows is in range.
    @inline(__always)
    func get(_ index: Int) -> UInt8 {
        self.storage[index]
    }

    /// Writes a little-endian `UInt16` at `offset`.
    mutating func setUInt16LE(_ offset: Int, _ value: UInt16) {
        self.storage[offset] = UInt8(truncatingIfNeeded: value)
        self.storage[offset + 1] = UInt8(truncatingIfNeeded: value >> 8)
    }

    /// Writes a little-endian `UInt32` at `offset`.
    mutating func setUInt32LE(_ offset: Int, _ value: UInt32) {
        self.setUInt16LE(offset, UInt16(truncatingIfNeeded: value))
        self.setUInt16LE(offset + 2, UInt16(truncatingIfNeeded: value >> 16))
    }

    /// Calls `body` with the valid bytes as a borrowed ``RawSpan`` (the decoders' input type).
    public func withBytes<Result: ~Copyable, Failure: Error>(
        _ body: (RawSpan) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try body(self.storage.span.bytes.extracting(0..<self.count))
    }

    /// Calls `body` with the valid bytes as an `UnsafeRawBufferPointer`, valid only during the call.
    public func withUnsafeBytes<Result: ~Copyable, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let span = self.storage.span.bytes.extracting(0..<self.count)
        return try span.withUnsafeBytes(body)
    }
}

extension E4PacketBytes: Equatable {
    public static func == (lhs: E4PacketBytes, rhs: E4PacketBytes) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for index in 0..<lhs.count where lhs.storage[index] != rhs.storage[index] { return false }
        return true
    }
}
