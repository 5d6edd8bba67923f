/// Allocation budgets per build configuration.
///
/// The steady-state budget of the release build is 0 (SPEC §8). The unoptimised debug build that `swift test`
/// runs allocates in a few places where unspecialised generic code boxes values (`Collection.first` on an array,
/// an `OptionSet` array literal); those are budgeted here per iteration, exactly, with where they come from, so
/// the debug test still catches any new allocation.
enum Budget {
    #if DEBUG
    static let configuration = "debug"
    static let isDebug = true
    #else
    static let configuration = "release"
    static let isDebug = false
    #endif

    /// `release` (or `debug`, in a debug build) allocations per iteration, over `iterations`.
    static func perIteration(release: UInt64, debug: UInt64, _ iterations: Int) -> UInt64 {
        (Self.isDebug ? debug : release) * UInt64(iterations)
    }
}
