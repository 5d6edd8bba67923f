/// One adapter's connection slots as a board publishes them.
public struct AdapterSlots: Hashable, Sendable {
    /// The adapter's name (`hci0`), an identifier.
    public var name: String
    /// How many connections the adapter takes (`bluetooth.max_connections` for it).
    public var capacity: Int
    /// Slots neither connected nor being connected.
    public var free: Int

    public init(name: String, capacity: Int, free: Int) {
        self.name = name
        self.capacity = capacity
        self.free = free
    }
}
