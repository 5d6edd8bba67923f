/// Which adapter takes the next connection when a board has several (SPEC §18, `bluetooth.adapter` a list): each
/// takes `capacity` wristbands, a wristband goes to the adapter with the most free slots among those that heard
/// it (then the stronger RSSI, then the configured order), and with several adapters each has at most one attempt
/// in flight — a controller starts one LE connection at a time, so a second attempt would queue behind the first
/// while another adapter sits idle. With one adapter, attempts are not limited (as before there were several).
struct ConnectionSlots: Equatable {
    /// The adapters in the configured order.
    let adapters: [String]
    let capacity: Int
    /// Connections wanted (up, or being made) per adapter.
    private(set) var used: [String: Int] = [:]
    /// Adapters with an attempt in flight.
    private(set) var attempting: Set<String> = []

    init(adapters: [String], capacity: Int) {
        self.adapters = adapters
        self.capacity = capacity
    }

    /// Counts a wanted connection on `adapter`; `attempting` when it is not up yet.
    mutating func take(_ adapter: String, attempting: Bool) {
        self.used[adapter, default: 0] += 1
        if attempting { self.attempting.insert(adapter) }
    }

    func free(_ adapter: String) -> Int {
        guard self.adapters.contains(adapter) else { return 0 }
        return max(self.capacity - self.used[adapter, default: 0], 0)
    }

    /// The adapter to connect through, among `heard` (adapter, RSSI) pairs; `nil` when none has room now.
    func choose(_ heard: [(adapter: String, rssi: Int?)]) -> String? {
        let open = heard.filter {
            self.free($0.adapter) > 0 && (self.adapters.count == 1 || !self.attempting.contains($0.adapter))
        }
        return open.min { a, b in
            let (freeA, freeB) = (self.free(a.adapter), self.free(b.adapter))
            if freeA != freeB { return freeA > freeB }
            let (rssiA, rssiB) = (a.rssi ?? Int.min, b.rssi ?? Int.min)
            if rssiA != rssiB { return rssiA > rssiB }
            let (orderA, orderB) = (self.adapters.firstIndex(of: a.adapter), self.adapters.firstIndex(of: b.adapter))
            return (orderA ?? .max) < (orderB ?? .max)
        }?.adapter
    }
}
