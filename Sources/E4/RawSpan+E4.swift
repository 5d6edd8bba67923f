// Little helpers to read fixed-width fields out of a borrowed byte view. Every caller checks the length first,
// so the bounds checks inside `unsafeLoad(fromByteOffset:as:)` never fire on packet input.

extension RawSpan {
    /// The byte at `offset`.
    @inline(__always)
    func e4Byte(_ offset: Int) -> UInt8 {
        self.unsafeLoad(fromByteOffset: offset, as: UInt8.self)
    }

    /// A little-endian `UInt16` starting at `offset`.
    @inline(__always)
    func e4UInt16LE(_ offset: Int) -> UInt16 {
        UInt16(self.e4Byte(offset)) | UInt16(self.e4Byte(offset + 1)) << 8
    }

    /// A little-endian `UInt32` starting at `offset`.
    @inline(__always)
    func e4UInt32LE(_ offset: Int) -> UInt32 {
        UInt32(self.e4UInt16LE(offset)) | UInt32(self.e4UInt16LE(offset + 2)) << 16
    }

    /// A little-endian `UInt64` starting at `offset`.
    @inline(__always)
    func e4UInt64LE(_ offset: Int) -> UInt64 {
        UInt64(self.e4UInt32LE(offset)) | UInt64(self.e4UInt32LE(offset + 4)) << 32
    }

    /// A big-endian 24-bit unsigned value starting at `offset`.
    @inline(__always)
    func e4UInt24BE(_ offset: Int) -> UInt32 {
        UInt32(self.e4Byte(offset)) << 16 | UInt32(self.e4Byte(offset + 1)) << 8 | UInt32(self.e4Byte(offset + 2))
    }
}
