import CZlib
import Glibc
import Posix
@testable import Spool

/// Spool recovery (SPEC §11) of a damaged segment directory: the input becomes the files of an empty directory, then
/// recovery (what `empalinkd` does at start) and inspection (`empalinkctl spool`) run over it.
///
/// The input is a sequence of files, each a kind byte and a framed chunk of contents. Kind (low 3 bits): 0 a segment
/// whose number is the next 8 bytes, 1…4 segments 1…4, 5 the `cursor`, 6 `cursor.tmp`, 7 a segment-like stray name.
/// Bit 0x80 re-seals the checksums before the file is written (the CRC of every whole frame of a segment, the
/// trailing CRC of a cursor), so mutations get past them to the fields behind (a fuzzer cannot forge CRC-32).
enum SpoolFuzz {
    static let target = FuzzTarget(
        name: "spool",
        summary: "files of a spool directory (kind, length, bytes): SpoolRecovery.run, SpoolInspection.inspect"
    ) { bytes in
        let directory = Self.directory
        Self.empty(directory)
        var input = FuzzInput(bytes)
        var files = 0
        while let kind = input.byte(), files < 16 {
            files += 1
            let name: String
            switch kind & 0x07 {
            case 0:
                var number: UInt64 = 0
                for (index, byte) in input.take(8).enumerated() { number |= UInt64(byte) << (8 * UInt64(index)) }
                name = SpoolDirectory.segmentName(number)
            case 5: name = SpoolLedger.fileName
            case 6: name = SpoolLedger.temporaryName
            case 7: name = "0000000000000000001.seg"
            default: name = SpoolDirectory.segmentName(UInt64(kind & 0x07))
            }
            var contents = Array(input.chunk())
            if kind & 0x80 != 0 {
                if kind & 0x07 == 5 || kind & 0x07 == 6 { Self.resealCursor(&contents) } else { Self.reseal(&contents) }
            }
            Self.write(contents, to: directory + "/" + name)
        }
        do throws(SpoolError) {
            let recovery = try SpoolRecovery.run(directory: directory)
            _ = recovery.report
        } catch {
            _ = "\(error)"
        }
        do throws(Errno) {
            _ = try SpoolInspection.inspect(directory: directory)
        } catch {
            _ = "\(error)"
        }
    }

    /// One directory per process, emptied before each input; in memory (`/dev/shm`) where there is one, since
    /// recovery syncs what it repairs and a disk's fsync would bound the executions per second.
    static let directory: String = {
        var status = stat()
        let base = stat("/dev/shm", &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR ? "/dev/shm" : "/tmp"
        let path = "\(base)/empalink-fuzz-spool-\(getpid())"
        mkdir(path, 0o700)
        return path
    }()

    static func empty(_ directory: String) {
        guard let stream = opendir(directory) else { return }
        defer { closedir(stream) }
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { unlink(directory + "/" + name) }
        }
    }

    static func write(_ bytes: [UInt8], to path: String) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { return }
        defer { close(fd) }
        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }

    /// Rewrites a cursor's trailing CRC-32 (of everything before it).
    static func resealCursor(_ bytes: inout [UInt8]) {
        guard bytes.count >= 4 else { return }
        let end = bytes.count - 4
        let crc = bytes.withUnsafeBufferPointer { UInt32(truncatingIfNeeded: crc32(0, $0.baseAddress, uInt(end))) }
        for index in 0..<4 { bytes[end + index] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(index))) }
    }

    /// Rewrites the checksum of each whole frame found from the start, frame after frame.
    static func reseal(_ bytes: inout [UInt8]) {
        var offset = 0
        while bytes.count - offset >= SpoolFrame.headerSize {
            let length = bytes.withUnsafeBytes { raw in
                Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)))
            }
            let size = SpoolFrame.headerSize + length
            guard length >= 4, size <= bytes.count - offset else { return }
            let crc = bytes.withUnsafeBytes { raw in
                SpoolFrame.checksum(UnsafeRawBufferPointer(rebasing: raw[(offset + 4)..<(offset + size)]))
            }
            bytes.withUnsafeMutableBytes { raw in
                raw.storeBytes(of: crc.littleEndian, toByteOffset: offset + 8, as: UInt32.self)
            }
            offset += size
        }
    }
}
