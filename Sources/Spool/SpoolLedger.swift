#if canImport(Glibc)
import Glibc
#endif
import CZlib
import Posix

/// The acknowledgement cursor: which records the broker has acknowledged, persisted atomically in the file
/// `cursor` of the spool directory.
///
/// Every sequence number below ``acknowledgedBelow`` is acknowledged, and so is every number in
/// ``acknowledged`` (acknowledgements that arrived out of order, at most ``maxListed``). An acknowledgement
/// that does not fit the list is not persisted: after a restart that record is sent again, which
/// at-least-once delivery allows and `sid`/`seq` make detectable.
///
/// It also records ``nextSequence``, the sequence number the next append would have had when it was written, so
/// that recovery can tell records lost at the very end (a deleted or cut last segment) from records never written.
///
/// File layout, little-endian: magic `ESC2`, u64 ``acknowledgedBelow``, u64 ``nextSequence``, u32 count,
/// count × u64, then the zlib CRC-32 of everything before it. A file that does not validate is treated as
/// "nothing acknowledged".
public struct SpoolLedger: Equatable, Sendable {
    public static let fileName = "cursor"
    static let temporaryName = "cursor.tmp"
    static let magic: UInt32 = 0x3243_5345
    /// The most out-of-order acknowledgements persisted.
    public static let maxListed = 8192
    /// The largest sequence number a spool uses, 2^62 (a record a microsecond for 146 000 years): a frame or a
    /// cursor beyond it is damage. A frame numbered 2^64 - 1 left no successor, and recovery trapped on it at every
    /// start (found by `make fuzz`, target `spool`).
    public static let maximumSequence: UInt64 = 1 << 62

    public var acknowledgedBelow: UInt64
    /// Sorted, all ≥ ``acknowledgedBelow``.
    public var acknowledged: [UInt64]
    /// One past the last sequence number appended when the ledger was written.
    public var nextSequence: UInt64

    public init(acknowledgedBelow: UInt64 = 0, acknowledged: [UInt64] = [], nextSequence: UInt64 = 0) {
        self.acknowledgedBelow = acknowledgedBelow
        self.acknowledged = acknowledged
        self.nextSequence = nextSequence
    }

    /// The size of a file listing `count` sequence numbers.
    static func fileSize(listing count: Int) -> Int { 28 + 8 * count }

    /// Whether the ledger says `sequence` was acknowledged.
    public func isAcknowledged(_ sequence: UInt64) -> Bool {
        if sequence < self.acknowledgedBelow { return true }
        var low = 0
        var high = self.acknowledged.count
        while low < high {
            let middle = (low + high) / 2
            if self.acknowledged[middle] < sequence { low = middle + 1 } else { high = middle }
        }
        return low < self.acknowledged.count && self.acknowledged[low] == sequence
    }

    /// The file's bytes.
    public func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.fileSize(listing: self.acknowledged.count))
        Self.append(Self.magic, to: &bytes)
        Self.append(self.acknowledgedBelow, to: &bytes)
        Self.append(self.nextSequence, to: &bytes)
        Self.append(UInt32(self.acknowledged.count), to: &bytes)
        for sequence in self.acknowledged { Self.append(sequence, to: &bytes) }
        let crc = bytes.withUnsafeBufferPointer { buffer in
            UInt32(truncatingIfNeeded: crc32(0, buffer.baseAddress, uInt(buffer.count)))
        }
        Self.append(crc, to: &bytes)
        return bytes
    }

    /// Parses the file's bytes.
    ///
    /// - Returns: `nil` when they are not a valid ledger (wrong magic, size, CRC or order).
    public static func decode(_ bytes: [UInt8]) -> SpoolLedger? {
        guard bytes.count >= Self.fileSize(listing: 0) else { return nil }
        return bytes.withUnsafeBytes { raw -> SpoolLedger? in
            guard UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt32.self)) == Self.magic else {
                return nil
            }
            let count = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 20, as: UInt32.self)))
            guard count <= Self.maxListed, bytes.count == Self.fileSize(listing: count) else { return nil }
            let stored = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: bytes.count - 4, as: UInt32.self))
            let computed = UInt32(truncatingIfNeeded: crc32(
                0, raw.baseAddress?.assumingMemoryBound(to: UInt8.self), uInt(bytes.count - 4)
            ))
            guard stored == computed else { return nil }
            var ledger = SpoolLedger(
                acknowledgedBelow: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 4, as: UInt64.self)),
                nextSequence: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 12, as: UInt64.self))
            )
            var previous: UInt64?
            for index in 0..<count {
                let offset = 24 + 8 * index
                let sequence = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                guard sequence >= ledger.acknowledgedBelow, sequence < ledger.nextSequence,
                      previous.map({ sequence > $0 }) ?? true
                else { return nil }
                ledger.acknowledged.append(sequence)
                previous = sequence
            }
            guard ledger.acknowledgedBelow <= ledger.nextSequence, ledger.nextSequence <= Self.maximumSequence
            else { return nil }
            return ledger
        }
    }

    /// What ``read(directory:)`` found.
    public enum ReadResult: Equatable, Sendable {
        case missing
        /// Invalid contents: recovery treats it as "nothing acknowledged".
        case corrupt
        /// Cannot be read, or not a regular file (a symbolic link, a directory, …), with why: treated like
        /// ``corrupt``, and never followed.
        case unreadable(String)
        case valid(SpoolLedger)
    }

    /// Reads the ledger of a spool directory; never throws: every failure is an outcome.
    ///
    /// The file is opened with `O_NOFOLLOW` and checked with `fstat`: a symbolic link or anything but a regular
    /// file is reported as ``ReadResult/unreadable(_:)``, not read.
    public static func read(directory: String) -> ReadResult {
        let path = directory + "/" + Self.fileName
        let fd: FileDescriptor
        do throws(Errno) {
            fd = try FileDescriptor.open(path, flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
        } catch {
            if error == .noSuchFileOrDirectory { return .missing }
            if error == Errno(rawValue: ELOOP) { return .unreadable("a symbolic link, not followed") }
            return .unreadable("\(error)")
        }
        defer { fd.close() }
        do throws(Errno) {
            let status = try fd.status()
            guard status.kind == .regular else { return .unreadable("a \(status.kind.rawValue), not a file") }
            let bytes = try fd.readToEnd(limit: Self.fileSize(listing: Self.maxListed))
            return Self.decode(bytes).map { .valid($0) } ?? .corrupt
        } catch {
            return .unreadable("\(error)")
        }
    }

    /// Replaces the ledger file atomically: write a temporary file, fsync it, rename it over the old one, fsync
    /// the directory. A crash at any point leaves either the old or the new ledger, never a mix.
    ///
    /// An empty directory in the cursor's place is removed first (the write repairs it); anything else in the way
    /// fails the write.
    ///
    /// - Throws: ``Errno`` (`ENOSPC`, `EIO`, `EISDIR` for a non-empty directory named `cursor`); the old ledger
    ///   stays in place.
    public func write(directory: String) throws(Errno) {
        let temporary = directory + "/" + Self.temporaryName
        // O_NOFOLLOW: a symbolic link planted as the temporary file must not have its target truncated.
        let fd = try FileDescriptor.open(temporary, flags: O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o600)
        do throws(Errno) {
            let bytes = self.encoded()
            let result: Result<Void, Errno> = bytes.withUnsafeBytes { raw in
                do throws(Errno) {
                    try fd.writeAll(raw)
                    return .success(())
                } catch {
                    return .failure(error)
                }
            }
            try result.get()
            try fd.sync()
            fd.close()
        } catch {
            fd.close()
            try? FileSystem.removeFile(temporary)
            throw error
        }
        let path = directory + "/" + Self.fileName
        do throws(Errno) {
            try FileSystem.rename(temporary, to: path)
        } catch {
            // A directory where the cursor belongs: repair it when it is empty; a full one is not ours to delete.
            guard error == .isDirectory, Glibc.rmdir(path) == 0 else {
                try? FileSystem.removeFile(temporary)
                throw error
            }
            try FileSystem.rename(temporary, to: path)
        }
        try FileSystem.syncDirectory(directory)
    }

    private static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }
}
