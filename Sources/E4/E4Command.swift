/// A command written to 3E71 (SPEC §6). Profile v1 knows one: start streaming, `01` followed by the current
/// unix time as a little-endian `UInt32` (5 bytes). The simulator decodes what the agent writes.
public enum E4Command: Hashable, Sendable {
    /// Start streaming; the device's clock is set to `unixTime` (seconds since 1970).
    case start(unixTime: UInt32)

    /// The opcode of ``start(unixTime:)``.
    public static let startOpcode: UInt8 = 0x01
    /// The length of ``start(unixTime:)``.
    public static let startLength = 5

    /// Encodes the command.
    public func encode(into packet: inout E4PacketBytes) {
        switch self {
        case .start(let unixTime):
            packet.reset(count: Self.startLength)
            packet.set(0, Self.startOpcode)
            packet.setUInt32LE(1, unixTime)
        }
    }

    /// Decodes a written command.
    ///
    /// - Parameter bytes: The written value.
    /// - Returns: The command.
    /// - Throws: ``E4DecodeError/tooShort(minimum:actual:)`` for an empty value,
    ///   ``E4DecodeError/invalidContent(_:)`` (``E4InvalidContent/commandOpcode(_:)``) for an unknown opcode,
    ///   ``E4DecodeError/wrongLength(expected:actual:)`` for a start command that is not 5 bytes.
    public static func decode(_ bytes: RawSpan) throws(E4DecodeError) -> E4Command {
        guard bytes.byteCount >= 1 else { throw .tooShort(minimum: 1, actual: 0) }
        let opcode = bytes.e4Byte(0)
        guard opcode == Self.startOpcode else { throw .invalidContent(.commandOpcode(opcode)) }
        guard bytes.byteCount == Self.startLength else {
            throw .wrongLength(expected: Self.startLength, actual: bytes.byteCount)
        }
        return .start(unixTime: bytes.e4UInt32LE(1))
    }

    /// ``decode(_:)`` for callers holding an `UnsafeRawBufferPointer`.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(E4DecodeError) -> E4Command {
        try Self.decode(bytes.bytes)
    }
}
