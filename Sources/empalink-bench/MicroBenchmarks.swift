/// The in-process benchmarks of the data path (decode, JSON, the whole pipeline), in the order they are printed.
enum MicroBenchmarks {
    static func run() -> [BenchRow] {
        DecodeBenchmark.run(rounds: 250)
            + JSONBenchmark.run(messages: 200_000)
            + PipelineBenchmark.run(seconds: 3600)
    }
}
