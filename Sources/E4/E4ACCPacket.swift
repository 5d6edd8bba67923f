/// One decoded accelerometer packet: 6 samples, in 1/64 g, written by ``E4ACCDecoder``.
public struct E4ACCPacket: Sendable {
    /// The packet's flow counter.
    public var counter: UInt16
    /// X axis per sample.
    public var x: InlineArray<6, Int8>
    /// Y axis per sample.
    public var y: InlineArray<6, Int8>
    /// Z axis per sample.
    public var z: InlineArray<6, Int8>

    /// A zeroed packet to decode into.
    public init() {
        self.counter = 0
        self.x = InlineArray(repeating: 0)
        self.y = InlineArray(repeating: 0)
        self.z = InlineArray(repeating: 0)
    }
}
