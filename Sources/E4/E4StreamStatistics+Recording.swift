extension E4StreamStatistics {
    /// Counts one accepted packet and what its continuity says was lost or restarted.
    mutating func record(_ continuity: E4Continuity) {
        self.packets &+= 1
        switch continuity {
        case .first, .next: break
        case .gap(let lost): self.lostPackets &+= UInt64(lost)
        case .restart: self.restarts &+= 1
        }
    }
}
