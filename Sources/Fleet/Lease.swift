/// `P/fleet/lease/<S>`, retained without expiry (so the epoch outlives its holder): who may connect wristband `S`.
///
/// A board connects a wristband only while it holds its lease (SPEC §18). Between two leases of one epoch, the
/// higher ``scoreTenths`` wins, then the lower ``holder`` id (byte order): every board computes the same winner from
/// the leases alone, whatever order they arrived in.
public struct Lease: Hashable, Sendable {
    public enum State: String, Hashable, Sendable, CaseIterable {
        /// Asked for, settling: the claimer does not connect yet.
        case claimed
        /// Held and renewed: the holder connects.
        case held
        /// Given up by its holder: free at once.
        case released

        /// States of one holder's lease only move forward: a late `claimed` never undoes `held` or `released`.
        var rank: Int {
            switch self {
            case .claimed: 0
            case .held: 1
            case .released: 2
            }
        }
    }

    public var holder: String
    public var epoch: UInt64
    public var state: State
    /// Seconds the lease lives after it is received, unless renewed.
    public var ttl: Int
    /// The holder's smoothed RSSI when it claimed, in tenths of a dBm; fixed for the epoch.
    public var scoreTenths: Int

    public static let ttlRange: ClosedRange<UInt64> = 1...300

    public init(holder: String, epoch: UInt64, state: State, ttl: Int, scoreTenths: Int) {
        self.holder = holder
        self.epoch = epoch
        self.state = state
        self.ttl = ttl
        self.scoreTenths = scoreTenths
    }

    /// Whether this lease beats `other` for the same wristband: a higher epoch, or in one epoch the higher score,
    /// then the lower holder id. Leases equal in all three are the same lease (neither beats the other).
    public func beats(_ other: Lease) -> Bool {
        if self.epoch != other.epoch { return self.epoch > other.epoch }
        if self.scoreTenths != other.scoreTenths { return self.scoreTenths > other.scoreTenths }
        return self.holder.utf8.lexicographicallyPrecedes(other.holder.utf8)
    }

    /// `{"v":1,"holder":"board-a","epoch":7,"state":"held","ttl":6,"score":-61.5}`
    public func encoded() -> [UInt8] {
        var writer = FleetJSONWriter()
        writer.raw("{")
        writer.key("v", first: true)
        writer.raw("\(FleetProtocol.version)")
        writer.key("holder")
        writer.identifier(self.holder)
        writer.key("epoch")
        writer.raw("\(self.epoch)")
        writer.key("state")
        writer.identifier(self.state.rawValue)
        writer.key("ttl")
        writer.raw("\(self.ttl)")
        writer.key("score")
        writer.tenths(self.scoreTenths)
        writer.raw("}")
        return writer.bytes
    }

    /// - Throws: ``FleetDecodeError`` for anything but a well-formed lease of this protocol version.
    public static func decode(_ bytes: [UInt8]) throws(FleetDecodeError) -> Lease {
        let fields = try FleetFields(try FleetJSON.parse(bytes).members(of: "lease"),
                                     allowed: ["v", "holder", "epoch", "state", "ttl", "score"])
        try checkVersion(fields)
        let holder = try fields.string("holder")
        guard FleetProtocol.isIdentifier(holder) else {
            throw .outOfRange(field: "holder", text: String(holder.prefix(24)))
        }
        let stateText = try fields.string("state")
        guard let state = State(rawValue: stateText) else {
            throw .outOfRange(field: "state", text: String(stateText.prefix(24)))
        }
        return Lease(holder: holder, epoch: try fields.unsigned("epoch", in: 1...FleetProtocol.maximumEpoch),
                     state: state, ttl: Int(try fields.unsigned("ttl", in: Self.ttlRange)),
                     scoreTenths: FleetJSONWriter.tenths(of: try fields.double("score", in: Sighting.rssiRange)))
    }
}
