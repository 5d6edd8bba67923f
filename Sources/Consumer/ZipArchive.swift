#if canImport(Glibc)
import Glibc
#endif
import CZlib

/// A flat zip archive (PKWARE APPNOTE 6.3: local headers, deflate, central directory; no zip64, no data
/// descriptors) built in memory — E4 connect exports are a few MiB per hour of recording.
public struct ZipArchive: Sendable {
    public private(set) var bytes: [UInt8] = []
    var central: [UInt8] = []
    var entries = 0
    let dosTime: UInt16
    let dosDate: UInt16

    /// - Parameter modified: the entries' modification time, unix seconds (UTC).
    public init(modified: Int) {
        var time = time_t(modified)
        var parts = tm()
        gmtime_r(&time, &parts)
        let year = max(Int(parts.tm_year) + 1900, 1980)
        self.dosTime = UInt16(parts.tm_hour) << 11 | UInt16(parts.tm_min) << 5 | UInt16(parts.tm_sec / 2)
        self.dosDate = UInt16(year - 1980) << 9 | UInt16(parts.tm_mon + 1) << 5 | UInt16(parts.tm_mday)
    }

    /// Errors building the archive.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Adds one file, deflated.
    ///
    /// - Throws: ``Failure`` when zlib fails or the archive would pass 4 GiB.
    public mutating func add(name: String, contents: [UInt8]) throws(Failure) {
        let crc = contents.withUnsafeBufferPointer { UInt32(crc32(0, $0.baseAddress, uInt($0.count))) }
        // compress2 writes a zlib stream: a 2-byte header, raw deflate, a 4-byte Adler-32. Zip wants the raw deflate.
        var bound = compressBound(uLong(contents.count))
        var packed = [UInt8](repeating: 0, count: Int(bound))
        let status = packed.withUnsafeMutableBufferPointer { out in
            contents.withUnsafeBufferPointer { input in
                compress2(out.baseAddress, &bound, input.baseAddress, uLong(input.count), Z_BEST_COMPRESSION)
            }
        }
        guard status == Z_OK, bound >= 6 else { throw Failure(description: "zlib compress2 failed (\(status))") }
        let deflated = packed[2..<Int(bound) - 4]
        let offset = self.bytes.count
        guard offset + deflated.count + contents.count < Int(UInt32.max) / 2 else {
            throw Failure(description: "archive over 2 GiB")
        }
        let nameBytes = Array(name.utf8)
        var local: [UInt8] = []
        Self.put32(&local, 0x0403_4B50)
        Self.put16(&local, 20)
        Self.put16(&local, 0)
        Self.put16(&local, 8)
        Self.put16(&local, self.dosTime)
        Self.put16(&local, self.dosDate)
        Self.put32(&local, crc)
        Self.put32(&local, UInt32(deflated.count))
        Self.put32(&local, UInt32(contents.count))
        Self.put16(&local, UInt16(nameBytes.count))
        Self.put16(&local, 0)
        self.bytes += local
        self.bytes += nameBytes
        self.bytes += deflated

        Self.put32(&self.central, 0x0201_4B50)
        Self.put16(&self.central, 0x031E)  // made by: Unix, spec 3.0
        Self.put16(&self.central, 20)
        Self.put16(&self.central, 0)
        Self.put16(&self.central, 8)
        Self.put16(&self.central, self.dosTime)
        Self.put16(&self.central, self.dosDate)
        Self.put32(&self.central, crc)
        Self.put32(&self.central, UInt32(deflated.count))
        Self.put32(&self.central, UInt32(contents.count))
        Self.put16(&self.central, UInt16(nameBytes.count))
        Self.put16(&self.central, 0)
        Self.put16(&self.central, 0)
        Self.put16(&self.central, 0)
        Self.put16(&self.central, 0)
        Self.put32(&self.central, UInt32(0o100644) << 16)
        Self.put32(&self.central, UInt32(offset))
        self.central += nameBytes
        self.entries += 1
    }

    /// The archive with its central directory and end record.
    public func finished() -> [UInt8] {
        var out = self.bytes
        let offset = out.count
        out += self.central
        Self.put32(&out, 0x0605_4B50)
        Self.put16(&out, 0)
        Self.put16(&out, 0)
        Self.put16(&out, UInt16(self.entries))
        Self.put16(&out, UInt16(self.entries))
        Self.put32(&out, UInt32(self.central.count))
        Self.put32(&out, UInt32(offset))
        Self.put16(&out, 0)
        return out
    }

    static func put16(_ out: inout [UInt8], _ value: UInt16) {
        out.append(UInt8(value & 0xFF))
        out.append(UInt8(value >> 8))
    }

    static func put32(_ out: inout [UInt8], _ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8((value >> UInt32(shift)) & 0xFF)) }
    }
}
