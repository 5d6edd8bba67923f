/// A registered (device, stream) key, e.g. "9ff167/bvp": the unit of ordering in the spool.
///
/// Registered once with ``Spool/streamKey(_:)`` so that appends carry a small index rather than a string.
public struct SpoolStreamKey: Hashable, Sendable {
    public let index: UInt16

    init(index: UInt16) {
        self.index = index
    }
}
