import Glibc
import Posix

#if !FUZZING
/// The normal build's entry point. Without -DFUZZING (a normal `swift build`), `empalink-fuzz` replays saved inputs
/// through a target, without coverage guidance or sanitizers: `empalink-fuzz TARGET FILE|DIRECTORY…`, `empalink-fuzz
/// list`, and `empalink-fuzz seeds DIRECTORY` (writes the synthesized seeds, ``SeedCorpus``). With
/// `--sanitize=fuzzer` SwiftPM compiles the module as a library (no `main.swift`, and this is compiled out), and
/// libFuzzer's own `main` calls Entry.swift's functions instead.
@main
struct FuzzReplayMain {
    static func main() {
        exit(FuzzReplay.run(Array(CommandLine.arguments.dropFirst())))
    }
}
#endif

/// The normal build's command line: replays inputs (directories are read one level deep) and reports how many.
enum FuzzReplay {
    static func run(_ arguments: [String]) -> CInt {
        guard let command = arguments.first else { return self.usage() }
        if command == "list" {
            for target in FuzzTarget.all { Console.out("\(target.name)\t\(target.summary)") }
            return 0
        }
        if command == "seeds" {
            guard arguments.count == 2 else { return self.usage() }
            return SeedCorpus.write(into: arguments[1])
        }
        guard let target = FuzzTarget.named(command), arguments.count >= 2 else { return self.usage() }
        var count = 0
        for path in arguments.dropFirst() {
            for file in self.files(path) {
                guard let bytes = self.read(file) else {
                    Console.err("empalink-fuzz: cannot read \(file)")
                    return 1
                }
                bytes.withUnsafeBytes { target.body($0) }
                count += 1
            }
        }
        Console.out("\(target.name): \(count) inputs replayed, none crashed")
        return 0
    }

    static func usage() -> CInt {
        let names = FuzzTarget.all.map(\.name).joined(separator: "|")
        Console.err("usage: empalink-fuzz \(names) FILE|DIRECTORY… | list | seeds DIRECTORY")
        return 2
    }

    static func files(_ path: String) -> [String] {
        guard let stream = opendir(path) else { return [path] }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if !name.hasPrefix(".") { names.append(path + "/" + name) }
        }
        return names.sorted()
    }

    static func read(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 { return nil }
            if count == 0 { return bytes }
            bytes += buffer[0..<count]
        }
    }
}
