/// One decoded skin-temperature packet: 8 samples, written by ``E4TemperatureDecoder``.
public struct E4TemperaturePacket: Sendable {
    /// The packet's flow counter.
    public var counter: UInt32
    /// The raw sensor values.
    public var raw: InlineArray<8, UInt16>
    /// Temperature in °C.
    public var celsius: InlineArray<8, Float>

    /// A zeroed packet to decode into.
    public init() {
        self.counter = 0
        self.raw = InlineArray(repeating: 0)
        self.celsius = InlineArray(repeating: 0)
    }
}
