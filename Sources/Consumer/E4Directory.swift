/// The wristbands an `e4-server` can offer, merged over every board (SPEC §17.2): an E4 id is the device's serial
/// in upper case; a wristband is allowed when a board that saw it says so, connected while a board reports it
/// connected. Devices a board reports with another profile than `e4` (heart-rate straps, SPEC §16) are left out
/// unless ``includesOtherProfiles``.
public struct E4Directory: Sendable {
    public struct Entry: Equatable, Sendable {
        public var serial: String
        public var allowed = false
        /// Connected on these boards.
        public var connectedOn: Set<String> = []
        public var isConnected: Bool { !self.connectedOn.isEmpty }
    }

    /// By upper-case id.
    public private(set) var entries: [String: Entry] = [:]

    /// Offer heart-rate straps and other non-E4 devices too (`e4-server --all-devices`).
    public var includesOtherProfiles = false
    /// Ids a board reported with a profile other than `e4`.
    public private(set) var otherProfiles: Set<String> = []

    public init(includesOtherProfiles: Bool = false) {
        self.includesOtherProfiles = includesOtherProfiles
    }

    public static func id(of serial: String) -> String { serial.uppercased() }

    public func entry(_ id: String) -> Entry? { self.entries[id.uppercased()] }

    /// The ids, sorted (replies list them in a stable order).
    public var ids: [String] { self.entries.keys.sorted() }

    public mutating func seen(_ devices: [String: SeenDevice]) {
        for (serial, device) in devices {
            let id = Self.id(of: serial)
            if let profile = device.profile, profile != "e4", !self.includesOtherProfiles {
                self.otherProfiles.insert(id)
                self.entries[id] = nil
                continue
            }
            var entry = self.entries[id] ?? Entry(serial: serial)
            entry.allowed = entry.allowed || device.allowed
            self.entries[id] = entry
        }
    }

    /// Records a wristband status.
    ///
    /// - Returns: the change of the merged connection state: `true` connected, `false` lost, `nil` no change.
    public mutating func status(_ state: DeviceState, board: String, serial: String) -> Bool? {
        let id = Self.id(of: serial)
        guard !self.otherProfiles.contains(id) else { return nil }
        var entry = self.entries[id] ?? Entry(serial: serial)
        let before = entry.isConnected
        if state.isConnected {
            entry.connectedOn.insert(board)
            // A board connects only whitelisted wristbands.
            entry.allowed = true
        } else {
            entry.connectedOn.remove(board)
        }
        self.entries[id] = entry
        return before == entry.isConnected ? nil : entry.isConnected
    }

    /// A board went offline: its wristbands are no longer connected through it.
    public mutating func boardOffline(_ board: String) -> [(id: String, connected: Bool)] {
        var changes: [(String, Bool)] = []
        for id in self.ids {
            guard var entry = self.entries[id], entry.connectedOn.contains(board) else { continue }
            entry.connectedOn.remove(board)
            self.entries[id] = entry
            if !entry.isConnected { changes.append((id, false)) }
        }
        return changes
    }
}
