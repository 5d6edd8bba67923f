import CLinux

/// A point on `CLOCK_MONOTONIC`, the clock every ``EventLoop`` timer runs on.
///
/// Monotonic time does not jump when NTP sets the wall clock, which on a Raspberry Pi without an RTC
/// happens minutes after boot; timeouts and backoff must not jump with it.
public struct MonotonicInstant: InstantProtocol, Hashable, Sendable, CustomStringConvertible {
    /// Nanoseconds since an unspecified point (boot).
    public let nanoseconds: UInt64

    @inlinable
    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    /// The current time.
    public static var now: MonotonicInstant {
        MonotonicInstant(nanoseconds: clinux_monotonic_nanoseconds())
    }

    public func advanced(by duration: Duration) -> MonotonicInstant {
        let delta = duration.saturatingNanoseconds
        if delta >= 0 {
            let (sum, overflow) = self.nanoseconds.addingReportingOverflow(UInt64(delta))
            return MonotonicInstant(nanoseconds: overflow ? UInt64.max : sum)
        }
        let magnitude = delta.magnitude
        return MonotonicInstant(nanoseconds: self.nanoseconds > magnitude ? self.nanoseconds - magnitude : 0)
    }

    public func duration(to other: MonotonicInstant) -> Duration {
        if other.nanoseconds >= self.nanoseconds {
            return .nanoseconds(Int64(clamping: other.nanoseconds - self.nanoseconds))
        }
        return .nanoseconds(-Int64(clamping: self.nanoseconds - other.nanoseconds))
    }

    public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }

    public var description: String { "MonotonicInstant(\(self.nanoseconds) ns)" }
}

extension Duration {
    /// This duration in whole nanoseconds, clamped to `Int64`'s range instead of overflowing.
    var saturatingNanoseconds: Int64 {
        let (seconds, attoseconds) = self.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? Int64.min : Int64.max }
        let (total, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow2 { return seconds < 0 ? Int64.min : Int64.max }
        return total
    }
}
