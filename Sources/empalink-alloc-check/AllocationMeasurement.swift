import CAllocationCounter

/// What one case allocated, and the budget it is held to.
struct AllocationMeasurement {
    /// The case's name, stable: the test and `Docs/performance.md` refer to it.
    let name: String
    /// How many times the measured body ran while counting.
    let iterations: Int
    /// What the measuring thread allocated over all iterations.
    let totals: alloc_counter_totals
    /// The most allocations (fresh plus reallocations) our code may make over all iterations (see ``counted``).
    let limit: UInt64
    /// Of ``totals``, the allocations whose stack reaches libmosquitto before our own code (nil: not classified).
    var libraryAllocations: UInt64?
    /// Set when the case did not do what it measures (e.g. a packet was not decoded): the case fails.
    var failure: String?

    /// Fresh allocations plus reallocations: every call that may touch the heap's free lists.
    var allocations: UInt64 { self.totals.allocations &+ self.totals.reallocations }

    /// The allocations held to ``limit``: all of them, or, where library allocations are classified, ours only.
    var counted: UInt64 { self.allocations - (self.libraryAllocations ?? 0) }

    var passed: Bool { self.failure == nil && self.counted <= self.limit }

    /// One line per case, `key=value` fields, parsed by `AllocationTests`.
    var line: String {
        var text = "CASE \(self.name) iterations=\(self.iterations) allocations=\(self.allocations)"
            + " mallocs=\(self.totals.allocations) reallocs=\(self.totals.reallocations) frees=\(self.totals.frees)"
            + " bytes=\(self.totals.bytes) limit=\(self.limit)"
        if let library = self.libraryAllocations {
            text += " libmosquitto=\(library) ours=\(self.counted)"
        }
        if let failure = self.failure { text += " failure=\"\(failure)\"" }
        return text + (self.passed ? " PASS" : " FAIL")
    }
}

extension AllocationMeasurement {
    /// Runs `body` `warmUp` times uncounted (first use of generic metadata, lazy globals and buffer growth
    /// allocate once), then `iterations` times while counting this thread's allocations.
    ///
    /// - Parameters:
    ///   - limit: The budget over all `iterations`; 0 for the steady-state paths.
    ///   - classifyLibrary: Capture stacks and attribute allocations made by libmosquitto (see
    ///     ``AllocationStacks/isLibraryAllocation(_:)``).
    static func measure(
        _ name: String, iterations: Int, warmUp: Int = 64, limit: UInt64 = 0, classifyLibrary: Bool = false,
        _ body: () -> Void
    ) -> AllocationMeasurement {
        for _ in 0..<warmUp { body() }
        let trace = AllocationStacks.traceRequested(name)
        alloc_counter_start(trace || classifyLibrary ? 1 : 0)
        for _ in 0..<iterations { body() }
        let totals = alloc_counter_stop()
        var measurement = AllocationMeasurement(name: name, iterations: iterations, totals: totals, limit: limit)
        if classifyLibrary { measurement.libraryAllocations = AllocationStacks.libraryAllocationCount() }
        if trace { AllocationStacks.write(name) }
        return measurement
    }
}
