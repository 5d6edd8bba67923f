/// Why a capture could not be read further (or a record not written), with where.
public enum E4CaptureError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The record at `offset` needs `needed` bytes but only `available` remain: a torn tail, or a file still
    /// being written.
    case truncated(offset: Int, needed: Int, available: Int)
    /// The record at `offset` declares a payload longer than ``E4Capture/maximumPayloadLength``: not a capture,
    /// or corrupt from here on.
    case badLength(offset: Int, length: Int)
    /// A read was asked to start outside the capture.
    case offsetOutOfRange(offset: Int, size: Int)
    /// A payload longer than ``E4Capture/maximumPayloadLength`` was offered to the writer.
    case payloadTooLong(length: Int)

    public var description: String {
        switch self {
        case .truncated(let offset, let needed, let available):
            "capture truncated at byte \(offset): record needs \(needed) bytes, \(available) remain"
        case .badLength(let offset, let length):
            "bad record at byte \(offset): payload length \(length) exceeds \(E4Capture.maximumPayloadLength)"
        case .offsetOutOfRange(let offset, let size):
            "capture offset \(offset) outside 0...\(size)"
        case .payloadTooLong(let length):
            "payload of \(length) bytes exceeds the capture limit of \(E4Capture.maximumPayloadLength)"
        }
    }
}
