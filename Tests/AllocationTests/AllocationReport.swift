import Foundation

/// What one run of `empalink-alloc-check` printed, parsed.
struct AllocationReport {
    /// One `CASE` line: `CASE <name> key=value … PASS|FAIL`.
    struct Case: Equatable {
        let line: String
        let fields: [String: String]
        let passed: Bool

        var iterations: UInt64 { self.fields["iterations"].flatMap { UInt64($0) } ?? 0 }
        /// Every allocation the measuring thread made (fresh plus reallocations).
        var allocations: UInt64 { self.fields["allocations"].flatMap { UInt64($0) } ?? UInt64.max }
        /// The allocations held to the budget: ours only where libmosquitto's are reported apart.
        var counted: UInt64 { self.fields["ours"].flatMap { UInt64($0) } ?? self.allocations }
        var limit: UInt64 { self.fields["limit"].flatMap { UInt64($0) } ?? 0 }
    }

    let status: Int32
    let output: String
    let errors: String
    let cases: [String: Case]
    /// `debug` or `release`, from the `SUMMARY` line.
    let configuration: String

    /// The executable sits next to the test bundle in `.build/<configuration>/`; `EMPALINK_BIN` overrides.
    static var executable: String {
        let directory = ProcessInfo.processInfo.environment["EMPALINK_BIN"]
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
        return directory + "/empalink-alloc-check"
    }

    /// Far above the few seconds a run takes, even in a debug build on a busy machine.
    static let timeoutSeconds = 300

    static func run(arguments: [String]) throws -> AllocationReport {
        let path = Self.executable
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw ReportError("\(path) is missing: build it with `swift build --product empalink-alloc-check`")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        // A hung check must fail the test, not stall the run. SIGKILL: the runner's blocked signals are inherited.
        let watchdog = DispatchWorkItem { kill(process.processIdentifier, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(Self.timeoutSeconds), execute: watchdog)
        // Read both pipes to the end before waiting, so a full pipe cannot stall the child.
        let errorData = ErrorCollector(errors.fileHandleForReading)
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        exited.wait()
        watchdog.cancel()
        let outputText = String(decoding: outputData, as: UTF8.self)
        var cases: [String: Case] = [:]
        var configuration = ""
        for line in outputText.split(separator: "\n") where line.hasPrefix("SUMMARY ") {
            for word in line.split(separator: " ") where word.hasPrefix("configuration=") {
                configuration = String(word.dropFirst("configuration=".count))
            }
        }
        for line in outputText.split(separator: "\n") where line.hasPrefix("CASE ") {
            let words = line.split(separator: " ")
            guard words.count >= 3 else { continue }
            var fields: [String: String] = [:]
            for word in words.dropFirst(2) {
                guard let equals = word.firstIndex(of: "=") else { continue }
                fields[String(word[..<equals])] = String(word[word.index(after: equals)...])
            }
            cases[String(words[1])] = Case(line: String(line), fields: fields, passed: words.last == "PASS")
        }
        return AllocationReport(status: process.terminationStatus, output: outputText, errors: errorData.text,
                                cases: cases, configuration: configuration)
    }
}

/// Drains a pipe on its own thread while the other pipe is read.
final class ErrorCollector: @unchecked Sendable {
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread.detachNewThread {
            self.data = handle.readDataToEndOfFile()
            self.done.signal()
        }
    }

    var text: String {
        self.done.wait()
        return String(decoding: self.data, as: UTF8.self)
    }
}

struct ReportError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
