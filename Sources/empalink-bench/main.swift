// empalink-bench: measurements of the building blocks (SPEC §14). Run with `make bench` (release build).
//
// Today: the event loop. Each benchmark prints one row; nothing here asserts, numbers go to
// Docs/performance.md together with the command that produced them.

import EventLoop
import Posix

#if DEBUG
let buildConfiguration = "debug build: numbers are not representative"
#else
let buildConfiguration = "release build"
#endif
Console.out("empalink-bench: event loop (\(buildConfiguration), \(LoopBenchmarks.cpuCount) CPUs)")
Console.out("")
var rows: [(String, String)] = []
do throws(Errno) {
    rows.append(try LoopBenchmarks.crossThreadRoundTrips(count: 100_000))
    rows.append(try LoopBenchmarks.executeThroughput(count: 1_000_000))
    rows.append(contentsOf: try LoopBenchmarks.timerLateness(count: 1000))
    rows.append(try LoopBenchmarks.idleWakeUps(seconds: 3, repeatingTimer: nil))
    rows.append(try LoopBenchmarks.idleWakeUps(seconds: 3, repeatingTimer: .seconds(1)))
} catch {
    Console.err("empalink-bench: \(error)")
    exitProcess(1)
}
rows.append(contentsOf: SpoolBenchmark.run())
let measured = MicroBenchmarks.run()
rows.append(contentsOf: measured.map { ($0.name, $0.result) })
let width = rows.map(\.0.count).max() ?? 0
Console.out("| " + "benchmark".padded(to: width) + " | result |")
Console.out("| " + String(repeating: "-", count: width) + " | --- |")
for (name, value) in rows {
    Console.out("| " + name.padded(to: width) + " | " + value + " |")
}
BenchReport.writeJSON(measured, rows: rows, arguments: CommandLine.arguments)
