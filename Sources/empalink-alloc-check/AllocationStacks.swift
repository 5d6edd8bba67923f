#if canImport(Glibc)
import Glibc
#endif
import CAllocationCounter

/// Where the counted allocations came from: the stacks `CAllocationCounter` captured.
///
/// `EMPALINK_ALLOC_TRACE=all` (or a comma-separated list of case names) prints every captured stack of those
/// cases to stderr, symbolised by glibc; pipe through `swift demangle` to read the Swift frames.
enum AllocationStacks {
    /// The shared object whose own allocations the MQTT case reports apart from ours.
    static let library = "libmosquitto"

    static func traceRequested(_ name: String) -> Bool {
        guard let value = getenv("EMPALINK_ALLOC_TRACE") else { return false }
        let text = String(cString: value)
        return text == "all" || text.split(separator: ",").contains { $0 == name }
    }

    /// Prints the first stacks of the last measurement to stderr, symbolised with file and line by
    /// `llvm-symbolizer` and demangled by `swift demangle` when they are on `PATH` (`EMPALINK_SYMBOLIZER`
    /// overrides the command; an empty value prints raw `object 0xoffset` frames).
    static func write(_ name: String) {
        let count = Int(alloc_counter_stack_count())
        let shown = min(count, Self.traceLimit)
        printError("--- \(name): \(count) captured allocation stack(s), showing \(shown)")
        let command = getenv("EMPALINK_SYMBOLIZER").map { String(cString: $0) }
            ?? "llvm-symbolizer --pretty-print | swift demangle --simplified"
        for index in 0..<shown {
            printError("--- allocation \(index + 1)")
            var depth: CInt = 0
            guard let frames = alloc_counter_stack(CInt(index), &depth) else { continue }
            var lines = ""
            for frame in 0..<Int(depth) {
                guard let address = frames[frame] else { continue }
                var file: UnsafePointer<CChar>?
                var offset: UInt = 0
                guard alloc_counter_object_offset(address, &file, &offset) != 0, let file else { continue }
                // A return address points after the call; one byte back lands on the calling line.
                lines += "\(String(cString: file)) 0x\(String(offset &- 1, radix: 16))\n"
            }
            guard !command.isEmpty, let pipe = popen(command + " 1>&2", "w") else {
                printError(lines)
                continue
            }
            fputs(lines, pipe)
            pclose(pipe)
        }
    }

    /// How many stacks ``write(_:)`` prints per case (`EMPALINK_ALLOC_TRACE_LIMIT`, default 16).
    static var traceLimit: Int {
        getenv("EMPALINK_ALLOC_TRACE_LIMIT").flatMap { Int(String(cString: $0)) } ?? 16
    }

    /// Counts the captured allocations whose stack reaches libmosquitto before any frame of this executable: the
    /// library allocated on its own behalf (message copies, packets), not because our Swift code asked it to
    /// through the Swift runtime. Frames in libc or the Swift runtime are skipped when walking up.
    static func libraryAllocationCount() -> UInt64 {
        var count: UInt64 = 0
        for index in 0..<alloc_counter_stack_count() where Self.isLibraryAllocation(Int(index)) {
            count += 1
        }
        return count
    }

    static func isLibraryAllocation(_ index: Int) -> Bool {
        var depth: CInt = 0
        guard let frames = alloc_counter_stack(CInt(index), &depth), depth > 0 else { return false }
        for frame in 0..<Int(depth) {
            guard let address = frames[frame] else { continue }
            if alloc_counter_address_in_object(address, Self.library) != 0 { return true }
            if alloc_counter_address_in_executable(address) != 0 { return false }
        }
        return false
    }
}

/// Writes one line to stderr.
func printError(_ text: String) {
    var line = text + "\n"
    line.withUTF8 { bytes in _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
}
