/// A scheduled timer, returned by ``EventLoop/scheduleTimer(after:repeating:handler:)`` and passed to
/// ``EventLoop/cancel(_:)``. Identifiers are never reused, so cancelling a timer that already fired is a
/// harmless no-op and can never cancel a different timer.
public struct TimerHandle: Hashable, Sendable {
    let id: UInt64
}
