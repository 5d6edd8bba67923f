import Glibc

// Without -DFUZZING (a normal `swift build`), `empalink-fuzz` replays saved inputs through a target, without
// coverage guidance or sanitizers: `empalink-fuzz TARGET FILE|DIRECTORY…`, `empalink-fuzz list`, and
// `empalink-fuzz seeds DIRECTORY` (writes the synthesized seed inputs, SeedCorpus). With -DFUZZING it is
// libFuzzer's driver (Entry.swift).
#if FUZZING
exit(FuzzEntry.main())
#else
exit(FuzzReplay.run(Array(CommandLine.arguments.dropFirst())))
#endif
