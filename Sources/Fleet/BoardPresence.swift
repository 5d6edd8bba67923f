/// `P/fleet/board/<A>`, retained without expiry: whether a board is online and its adapters' slots. Its Last Will is
/// the same message with `online` false.
///
/// `session` orders one board's presence messages without trusting delivery order: it grows with every broker
/// connection (the will registered for a connection carries that connection's session), and within a session
/// `online: false` is final.
public struct BoardPresence: Hashable, Sendable {
    public var online: Bool
    public var session: UInt64
    public var adapters: [AdapterSlots]

    public static let maximumAdapters = 8
    public static let maximumCapacity = 64

    public init(online: Bool, session: UInt64, adapters: [AdapterSlots]) {
        self.online = online
        self.session = session
        self.adapters = adapters
    }

    /// `{"v":1,"online":true,"session":3,"adapters":[{"name":"hci0","capacity":3,"free":2}]}`
    public func encoded() -> [UInt8] {
        var writer = FleetJSONWriter()
        writer.raw("{")
        writer.key("v", first: true)
        writer.raw("\(FleetProtocol.version)")
        writer.key("online")
        writer.raw(self.online ? "true" : "false")
        writer.key("session")
        writer.raw("\(self.session)")
        writer.key("adapters")
        writer.raw("[")
        for (index, adapter) in self.adapters.enumerated() {
            if index > 0 { writer.raw(",") }
            writer.raw("{")
            writer.key("name", first: true)
            writer.identifier(adapter.name)
            writer.key("capacity")
            writer.raw("\(adapter.capacity)")
            writer.key("free")
            writer.raw("\(adapter.free)")
            writer.raw("}")
        }
        writer.raw("]}")
        return writer.bytes
    }

    /// - Throws: ``FleetDecodeError`` for anything but a well-formed presence of this protocol version.
    public static func decode(_ bytes: [UInt8]) throws(FleetDecodeError) -> BoardPresence {
        let fields = try FleetFields(try FleetJSON.parse(bytes).members(of: "board"),
                                     allowed: ["v", "online", "session", "adapters"])
        try checkVersion(fields)
        guard case .array(let items) = try fields.required("adapters") else {
            throw .wrongType(field: "adapters", expected: "an array")
        }
        guard items.count <= Self.maximumAdapters else {
            throw .outOfRange(field: "adapters", text: "\(items.count) adapters")
        }
        var adapters: [AdapterSlots] = []
        for item in items {
            let adapter = try FleetFields(try item.members(of: "adapters[]"), allowed: ["name", "capacity", "free"])
            let name = try adapter.string("name")
            guard FleetProtocol.isIdentifier(name) else {
                throw .outOfRange(field: "name", text: String(name.prefix(24)))
            }
            let capacity = Int(try adapter.unsigned("capacity", in: 0...UInt64(Self.maximumCapacity)))
            let free = Int(try adapter.unsigned("free", in: 0...UInt64(capacity)))
            adapters.append(AdapterSlots(name: name, capacity: capacity, free: free))
        }
        return BoardPresence(online: try fields.bool("online"),
                             session: try fields.unsigned("session", in: 0...UInt64.max), adapters: adapters)
    }
}

func checkVersion(_ fields: FleetFields) throws(FleetDecodeError) {
    let version = try fields.unsigned("v", in: 0...UInt64.max)
    guard version == FleetProtocol.version else { throw .unsupportedVersion(version) }
}
