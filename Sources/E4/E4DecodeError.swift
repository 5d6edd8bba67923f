/// Why a notification was dropped. Thrown by every E4 decoder; a decoder that throws has counted the drop in
/// its ``E4StreamStatistics`` and left its state as it was, so the caller only has to skip the packet.
///
/// The contract is simple on purpose: a decoder that returns produced samples to publish; one that throws did
/// not, and the stream goes on (SPEC §6: a bad packet never stops the stream).
public enum E4DecodeError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A fixed-size packet (sensor packets: 20 bytes; command: 5) had another length. Counted as a decode error.
    case wrongLength(expected: Int, actual: Int)
    /// A packet (battery, control) was shorter than its first field. Counted as a decode error.
    case tooShort(minimum: Int, actual: Int)
    /// The length fit but a field did not. Counted as a decode error.
    case invalidContent(E4InvalidContent)
    /// The flow counter repeated the previous packet's value: the packet is dropped so its samples are not
    /// published (or, for BVP, integrated) twice. Counted in ``E4StreamStatistics/duplicates``, not as an error.
    case duplicate(counter: UInt32)

    public var description: String {
        switch self {
        case .wrongLength(let expected, let actual): "wrong length: expected \(expected) bytes, got \(actual)"
        case .tooShort(let minimum, let actual): "too short: expected at least \(minimum) bytes, got \(actual)"
        case .invalidContent(let content): "invalid content: \(content)"
        case .duplicate(let counter): "duplicate packet: flow counter \(counter) repeated"
        }
    }
}
