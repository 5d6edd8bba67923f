/// Decodes control notifications (3EB2). Control has no flow counter.
public struct E4ControlDecoder: Sendable {
    /// What this decoder has seen: ``E4StreamStatistics/packets`` counts tags and ignored events alike.
    public private(set) var statistics = E4StreamStatistics()

    /// A decoder with no history.
    public init() {}

    /// Decodes one control event.
    ///
    /// - Parameter bytes: The notification, at least 1 byte.
    /// - Returns: ``E4ControlEvent/tag`` for a button press, ``E4ControlEvent/ignored(_:)`` otherwise.
    /// - Throws: ``E4DecodeError/tooShort(minimum:actual:)`` for an empty notification.
    public mutating func decode(_ bytes: RawSpan) throws(E4DecodeError) -> E4ControlEvent {
        guard bytes.byteCount >= E4Control.minimumLength else {
            self.statistics.decodeErrors &+= 1
            throw .tooShort(minimum: E4Control.minimumLength, actual: bytes.byteCount)
        }
        self.statistics.packets &+= 1
        let byte = bytes.e4Byte(0)
        return byte == E4Control.buttonPress ? .tag : .ignored(byte)
    }

    /// ``decode(_:)`` for callers holding an `UnsafeRawBufferPointer`.
    public mutating func decode(_ bytes: UnsafeRawBufferPointer) throws(E4DecodeError) -> E4ControlEvent {
        try self.decode(bytes.bytes)
    }
}
