#if FUZZING
import Glibc
import Posix

// libFuzzer's entry points, for the build `make fuzz` makes (`--sanitize=fuzzer --sanitize=address -DFUZZING`):
// libFuzzer's `main` calls them. The target is the first argument
// (`empalink-fuzz config -max_total_time=60 Fuzz/corpus/config`), taken off before libFuzzer reads the rest.

nonisolated(unsafe) var selectedTarget: FuzzTarget?

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>
) -> CInt {
    let arguments = argv.pointee
    let first = argc.pointee >= 2 ? arguments[1].map { String(cString: $0) } : nil
    if first == "list" {
        for target in FuzzTarget.all { Console.out(target.name) }
        exit(0)
    }
    guard let first, let target = FuzzTarget.named(first) else {
        let names = FuzzTarget.all.map(\.name).joined(separator: ", ")
        Console.err("usage: empalink-fuzz TARGET [libFuzzer options and corpus directories]; TARGET: \(names)")
        exit(2)
    }
    selectedTarget = target
    arguments[1] = arguments[0]
    argv.pointee = arguments + 1
    argc.pointee -= 1
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    selectedTarget?.body(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size))
    return 0
}
#endif
