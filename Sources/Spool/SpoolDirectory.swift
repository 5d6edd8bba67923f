import Posix

/// File names inside a spool directory: segments `00000000000000000007.seg` (the segment number, 20 decimal
/// digits so that names sort in number order) and the ledger `cursor`.
public enum SpoolDirectory {
    static let segmentSuffix = ".seg"

    /// The file name of segment `number`.
    public static func segmentName(_ number: UInt64) -> String {
        let digits = String(number)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits + Self.segmentSuffix
    }

    /// The path of segment `number` in `directory`.
    public static func segmentPath(_ directory: String, _ number: UInt64) -> String {
        directory + "/" + Self.segmentName(number)
    }

    /// The segment number a file name stands for, or `nil` for any other file.
    public static func segmentNumber(ofFileName name: String) -> UInt64? {
        guard name.hasSuffix(Self.segmentSuffix) else { return nil }
        let stem = name.dropLast(Self.segmentSuffix.count)
        guard stem.count == 20, stem.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let number = UInt64(stem), number <= Self.maximumSegmentNumber else { return nil }
        return number
    }

    /// The largest segment number a spool uses, 2^62 (a segment a millisecond for 146 million years): a larger
    /// name is not a segment. `18446744073709551615.seg` left no number for the next segment, and recovery trapped
    /// on it at every start (found by `make fuzz`, target `spool`).
    public static let maximumSegmentNumber: UInt64 = 1 << 62

    /// The segment numbers present in `directory`, ascending.
    ///
    /// - Throws: ``Errno`` when the directory cannot be listed.
    public static func segmentNumbers(in directory: String) throws(Errno) -> [UInt64] {
        try FileSystem.contentsOfDirectory(directory).compactMap(Self.segmentNumber(ofFileName:)).sorted()
    }
}
