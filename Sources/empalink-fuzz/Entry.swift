#if FUZZING
import CFuzzer
import Glibc
import Posix

// The fuzzing build (`make fuzz`: `--sanitize=fuzzer --sanitize=address -DFUZZING`). SwiftPM links an executable's
// `main` to this module's entry point, which wins over libFuzzer's own `main`; so main.swift hands over to
// libFuzzer's driver here, with the target taken off the front of the command line:
// `empalink-fuzz config -max_total_time=60 Fuzz/corpus/config`.

nonisolated(unsafe) var selectedTarget: FuzzTarget?

enum FuzzEntry {
    static func main() -> CInt {
        var argc = CommandLine.argc
        if CommandLine.arguments.dropFirst().first == "list" {
            for target in FuzzTarget.all { Console.out(target.name) }
            return 0
        }
        guard argc >= 2, let target = FuzzTarget.named(CommandLine.arguments[1]) else {
            let names = FuzzTarget.all.map(\.name).joined(separator: ", ")
            Console.err("usage: empalink-fuzz TARGET [libFuzzer options and corpus directories]; TARGET: \(names)")
            return 2
        }
        selectedTarget = target
        let arguments = CommandLine.unsafeArgv
        arguments[1] = arguments[0]
        var shifted: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = arguments + 1
        argc -= 1
        return LLVMFuzzerRunDriver(&argc, &shifted, fuzzTestOneInput)
    }
}

/// libFuzzer's archive refers to this symbol (its unused `main` calls it); the driver gets it as its callback.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    selectedTarget?.body(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size))
    return 0
}
#endif
