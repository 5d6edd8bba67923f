/// `P/fleet/seen/<S>/<A>`, retained with a short message expiry: board `A` hears wristband `S`.
public struct Sighting: Hashable, Sendable {
    /// The board's smoothed RSSI in tenths of a dBm (`-615` is -61.5 dBm).
    public var rssiTenths: Int
    /// The board's free connection slots (all adapters), for wristbands it does not yet hold.
    public var free: Int

    /// RSSI outside this range (dBm) is not a radio reading.
    public static let rssiRange: ClosedRange<Double> = -127...20

    public init(rssiTenths: Int, free: Int) {
        self.rssiTenths = rssiTenths
        self.free = free
    }

    /// `{"v":1,"rssi":-61.5,"free":2}`
    public func encoded() -> [UInt8] {
        var writer = FleetJSONWriter()
        writer.raw("{")
        writer.key("v", first: true)
        writer.raw("\(FleetProtocol.version)")
        writer.key("rssi")
        writer.tenths(self.rssiTenths)
        writer.key("free")
        writer.raw("\(self.free)")
        writer.raw("}")
        return writer.bytes
    }

    /// - Throws: ``FleetDecodeError`` for anything but a well-formed sighting of this protocol version.
    public static func decode(_ bytes: [UInt8]) throws(FleetDecodeError) -> Sighting {
        let fields = try FleetFields(try FleetJSON.parse(bytes).members(of: "seen"), allowed: ["v", "rssi", "free"])
        try checkVersion(fields)
        let rssi = try fields.double("rssi", in: Self.rssiRange)
        let most = UInt64(BoardPresence.maximumCapacity * BoardPresence.maximumAdapters)
        let free = try fields.unsigned("free", in: 0...most)
        return Sighting(rssiTenths: FleetJSONWriter.tenths(of: rssi), free: Int(free))
    }
}
