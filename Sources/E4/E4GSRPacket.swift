/// One decoded GSR packet: 6 samples, written by ``E4GSRDecoder``.
public struct E4GSRPacket: Sendable {
    /// The packet's flow counter.
    public var counter: UInt16
    /// The raw 24-bit skin-resistance codes.
    public var codes: InlineArray<6, UInt32>
    /// Skin conductance in µS (0 = no contact).
    public var microsiemens: InlineArray<6, Float>

    /// A zeroed packet to decode into.
    public init() {
        self.counter = 0
        self.codes = InlineArray(repeating: 0)
        self.microsiemens = InlineArray(repeating: 0)
    }
}
