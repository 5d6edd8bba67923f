/// The loop's view of one segment file.
struct SpoolSegmentInfo: Equatable, Sendable {
    var number: UInt64
    /// The first sequence number it holds (or will hold).
    var firstSequence: UInt64
    /// One past the last sequence number it holds.
    var endSequence: UInt64
    /// Framed bytes in it (for `max_bytes`).
    var bytes: Int
    /// Records in it not yet acknowledged (pending or in flight).
    var unacknowledged: Int
    /// The append time of its first record, microseconds since 1970.
    var firstTimestamp: Int64?
}
