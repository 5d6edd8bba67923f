/// The fleet's timers and thresholds (SPEC §18, Docs/fleet.md). All durations are seconds on the board's own
/// monotonic clock; no value depends on another board's clock.
///
/// The defaults assume what a ward's LAN and an E4 give: a broker that delivers a message to every subscriber
/// within `D` ≤ 0.5 s, a BLE `Disconnect` that completes within 1 s, advertisements every 0.5-1 s. Tests run the
/// coordinator with these defaults; none is fitted to a recording.
public struct FleetPolicy: Hashable, Sendable {
    /// How often a board publishes its sightings (SPEC §18: every 2 s).
    public var sightingInterval: Double = 2
    /// How long a sighting counts after it is received, and its MQTT message expiry: three intervals, so one late or
    /// lost publication does not drop a board from the ranking, and a silent board drops out within 6 s.
    public var sightingExpiry: Double = 6
    /// The weight of a new advertisement in the smoothed RSSI (EWMA): 0.3 is a time constant of about three
    /// advertisements — enough to tame BLE's ±5 dB fading without lagging a walking patient by more than a few s.
    public var rssiSmoothing: Double = 0.3
    /// A wristband not heard for this long is no longer heard locally (its smoothed value starts over).
    public var localExpiry: Double = 6
    /// A lease lives this long after each renewal is received. It bounds pickup when a board dies without its Last
    /// Will reaching anyone in time (the broker's keepalive detection takes 1.5 keepalives, 45 s by default): with
    /// the settle window and a connect it keeps pickup near 10 s, under the 15 s asked for.
    public var leaseTTL: Int = 6
    /// A holder renews every third of the TTL: two renewals may be late before the lease expires.
    public var renewInterval: Double { Double(self.leaseTTL) / 3 }
    /// A claimer waits this long before it connects. It must exceed 2·D, so that two claims of one epoch made
    /// before either was seen are both seen by both claimers before either connects; and D + a BLE disconnect, so
    /// that a holder fenced by the claim has let go first (break-before-make).
    public var settle: Double = 2
    /// The delay per rank before a board claims a free lease: the best-placed board claims at once, the next one
    /// second later, and so on; it only avoids needless contention (the tie-break keeps it safe without it).
    public var stagger: Double = 1
    /// A challenger's smoothed RSSI must beat the holder's by this much (tenths of a dB: 8 dB) ...
    public var handoverMarginTenths: Int = 80
    /// ... for this long without a break ...
    public var handoverSustain: Double = 10
    /// ... and the holder must have held the lease this long, before the challenger claims over it: sticky.
    public var minimumHold: Double = 30
    /// A holder neither connected to nor hearing its wristband for this long releases it to boards that hear it:
    /// the lease TTL, so a holder that can neither hear nor reach its wristband keeps it no longer than a dead board
    /// would. (It retries the link at once meanwhile, so a brief fade in range is reconnected well within it; a retry
    /// still in flight is not contact.) An E4 is silent while connected, so no other board hears a walking patient's
    /// wristband until its link is lost: this is much of a handover's gap (`make test-fleet`: 9 s).
    public var lostRelease: Double = 6
    /// After each broker connection, a board claims nothing for this long: holders re-assert their leases at
    /// once, and after a broker restart without persistence every board must have reconnected and re-asserted
    /// before a missing or expired lease means free.
    public var grace: Double = 10
    /// The first retry after a failed connection attempt; it doubles per consecutive failure up to
    /// ``retryMaximum``.
    public var retryInitial: Double = 1
    public var retryMaximum: Double = 8
    /// Boards tracked at most (and sightings per wristband): a bound on what a hostile publisher can make us hold.
    public var maximumBoards: Int = 64

    public init() {}
}
