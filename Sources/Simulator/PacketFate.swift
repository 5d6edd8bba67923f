/// What became of one notification, as the truth files record it (`status` column).
enum PacketFate: Int {
    /// Sent to every subscriber.
    case delivered = 0
    /// Dropped by the packet-loss fault; its flow counter was used, so receivers see a gap.
    case lost = 1
    /// Sent garbled (wrong length or flipped bits) by the corruption fault.
    case corrupted = 2
}
