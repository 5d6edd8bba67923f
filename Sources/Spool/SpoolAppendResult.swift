/// The outcome of ``Spool/append(key:topic:message:qos:retain:timestamp:inFlight:)``.
public enum SpoolAppendResult: Equatable, Sendable {
    /// Queued for the writer thread under this id.
    case appended(id: UInt64)
    /// Not kept; counted in ``SpoolMetrics`` under this reason.
    case dropped(SpoolDropReason)
}

/// Why records left the spool without a broker acknowledgement; each has its own counter in ``SpoolMetrics``.
public enum SpoolDropReason: Int, Sendable, CaseIterable, CustomStringConvertible {
    /// `max_bytes` reached with `on_full = "drop_newest"`: the new record was refused.
    case fullNewest
    /// `max_bytes` reached with `on_full = "drop_oldest"`: an old segment made room.
    case fullOldest
    /// The ring to the writer thread was full (the disk is slower than the input): dropped, never waited for.
    case ringFull
    /// The writer could not write it: the filesystem is full (`ENOSPC`).
    case noSpace
    /// The writer could not write it: `EIO` or another error.
    case writeError
    /// Its bytes on disk went bad after it was written (found when replaying).
    case corrupt
    /// Larger than ``SpoolFrame/maxMessageSize`` or a key/topic longer than 65 535 bytes.
    case tooLarge
    /// The spool is closed.
    case closed

    public var description: String {
        switch self {
        case .fullNewest: "full_newest"
        case .fullOldest: "full_oldest"
        case .ringFull: "ring_full"
        case .noSpace: "no_space"
        case .writeError: "write_error"
        case .corrupt: "corrupt"
        case .tooLarge: "too_large"
        case .closed: "closed"
        }
    }
}
