#if canImport(Glibc)
import Glibc
#endif
import Posix

/// The files of one E4 connect session while it is being recorded: `OUT/.partial/<T>_<ID>/` with the CSVs appended
/// as data arrives, and the atomic finalisation into `OUT/<T>_<ID>.zip` (SPEC §17.1).
struct E4SessionFiles {
    /// The CSVs recorded live, in the order they go into the zip with `HR.csv` and `info.txt`.
    static let liveFiles = ["ACC.csv", "BVP.csv", "EDA.csv", "TEMP.csv", "IBI.csv", "tags.csv"]
    static let zipOrder = ["ACC.csv", "BVP.csv", "EDA.csv", "HR.csv", "IBI.csv", "TEMP.csv", "info.txt", "tags.csv"]

    /// The header lines of each live file for session start `start`.
    static func headers(start: Int) -> [String: String] {
        let t = DecimalText.fixed(Double(start), 6)
        return [
            "ACC.csv": "\(t), \(t), \(t)\n32.000000, 32.000000, 32.000000\n",
            "BVP.csv": "\(DecimalText.fixed(Double(start), 2))\n64.000000\n",
            "EDA.csv": "\(t)\n4.000000\n",
            "TEMP.csv": "\(t)\n4.000000\n",
            "IBI.csv": "\(t), IBI\n",
            "tags.csv": "",
        ]
    }

    static func file(for stream: ConsumerStream) -> String? {
        switch stream {
        case .acc: return "ACC.csv"
        case .bvp: return "BVP.csv"
        case .gsr: return "EDA.csv"
        case .temp: return "TEMP.csv"
        case .ibi: return "IBI.csv"
        case .tag: return "tags.csv"
        case .hr, .battery, .contact: return nil
        }
    }

    /// One row of a sampled stream's file.
    static func row(_ stream: ConsumerStream, _ values: ArraySlice<Double>) -> String {
        switch stream {
        case .acc:
            return values.map { String(Int($0)) }.joined(separator: ",") + "\n"
        case .gsr:
            return DecimalText.fixed(values[values.startIndex], 6) + "\n"
        default:
            return DecimalText.fixed(values[values.startIndex], 2) + "\n"
        }
    }

    // MARK: file system helpers (all failures are reported, never trapped on)

    static func makeDirectory(_ path: String) throws(Errno) {
        if mkdir(path, 0o755) != 0 && errno != EEXIST { throw Errno.current }
    }

    static func entries(of directory: String) -> [String] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    static func append(_ text: String, to path: String) throws(Errno) {
        let fd = try FileDescriptor.open(path, flags: O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, mode: 0o644)
        defer { fd.close() }
        try fd.writeAll(text)
    }

    static func write(_ bytes: [UInt8], to path: String, sync: Bool) throws(Errno) {
        let fd = try FileDescriptor.open(path, flags: O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o644)
        defer { fd.close() }
        var failure: Errno?
        bytes.withUnsafeBytes { raw in
            do throws(Errno) { try fd.writeAll(raw) } catch { failure = error }
        }
        if let failure { throw failure }
        if sync { try fd.sync() }
    }

    static func syncDirectory(_ path: String) {
        if let fd = try? FileDescriptor.openDirectory(path) {
            try? fd.sync()
            fd.close()
        }
    }

    /// Cuts a file after its last complete line (a crash can leave half a row).
    static func truncateToLastLine(_ path: String) {
        guard var bytes = try? readFile(atPath: path, limit: 1 << 30) else { return }
        while let last = bytes.last, last != UInt8(ascii: "\n") { bytes.removeLast() }
        if let fd = try? FileDescriptor.open(path, flags: O_WRONLY | O_CLOEXEC) {
            try? fd.truncate(to: bytes.count)
            fd.close()
        }
    }

    /// Zips `directory`'s files into `zipPath` atomically: a temporary name, fsync, rename, fsync of the directory.
    /// Then removes `directory`.
    static func finalise(directory: String, start: Int, zipPath: String, outDirectory: String) throws(ZipArchive.Failure) {
        var archive = ZipArchive(modified: start)
        for name in Self.zipOrder {
            let contents = (try? readFile(atPath: directory + "/" + name, limit: 1 << 30)) ?? []
            try archive.add(name: name, contents: contents)
        }
        let temporary = outDirectory + "/." + Self.basename(zipPath) + ".tmp"
        do throws(Errno) {
            try Self.write(archive.finished(), to: temporary, sync: true)
        } catch {
            unlink(temporary)
            throw ZipArchive.Failure(description: "\(temporary): \(error)")
        }
        guard rename(temporary, zipPath) == 0 else {
            let error = Errno.current
            unlink(temporary)
            throw ZipArchive.Failure(description: "rename to \(zipPath): \(error)")
        }
        Self.syncDirectory(outDirectory)
        for name in Self.entries(of: directory) { unlink(directory + "/" + name) }
        rmdir(directory)
    }

    static func basename(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }
}
