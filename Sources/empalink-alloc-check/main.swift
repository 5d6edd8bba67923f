#if canImport(Glibc)
import Glibc
#endif
import CAllocationCounter

// empalink-alloc-check: allocations per notification in steady state (SPEC §8, §14), counted by overriding
// malloc & co. in this process only (see CAllocationCounter). Prints one `CASE` line per case and exits 0 when
// every case is within its budget, 1 otherwise, 2 on bad usage.
//
//     empalink-alloc-check [--iterations N] [--no-mqtt]     # --no-mqtt: no broker, no MQTT or agent cases
//     EMPALINK_ALLOC_TRACE=all|CASE,... empalink-alloc-check 2>&1 | swift demangle   # where did it allocate?

var iterations = 1000
var withMQTT = true
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--iterations":
        guard let value = arguments.popFirst().flatMap({ Int($0) }), value > 0 else {
            printError("usage: empalink-alloc-check [--iterations N] [--no-mqtt]")
            exit(2)
        }
        iterations = value
    case "--no-mqtt":
        withMQTT = false
    case "--help", "-h":
        print("usage: empalink-alloc-check [--iterations N] [--no-mqtt]")
        exit(0)
    default:
        printError("empalink-alloc-check: unknown argument \(argument)")
        exit(2)
    }
}

alloc_counter_prepare()
var results: [AllocationMeasurement] = []
results.reserveCapacity(64)
results += DecoderChecks.run(iterations: iterations)
results += DeviceStreamsChecks.run(iterations: iterations)
results += DeviceStreamsMotionChecks.run(iterations: iterations)
results += SpectralChecks.run(iterations: iterations)
results += ProfileSeamChecks.run(iterations: iterations)
results += HeartRateChecks.run(iterations: iterations)
do {
    results += try EventLoopChecks.run(iterations: iterations)
} catch {
    printError("empalink-alloc-check: event loop: \(error)")
    exit(1)
}
do {
    results += try SpoolChecks.run(iterations: iterations)
} catch {
    printError("empalink-alloc-check: \(error)")
    exit(1)
}
if withMQTT {
    do {
        results += try MQTTChecks.run(iterations: iterations)
        results += try AgentPipelineChecks.run(iterations: iterations)
    } catch {
        printError("empalink-alloc-check: \(error)")
        exit(1)
    }
}
for result in results {
    print(result.line)
}
let failed = results.filter { !$0.passed }
print("SUMMARY configuration=\(Budget.configuration) cases=\(results.count) failed=\(failed.count)")
exit(failed.isEmpty ? 0 : 1)
