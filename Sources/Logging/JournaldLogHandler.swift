#if canImport(Glibc)
import Glibc
#endif
import CSystemd
import Synchronization

/// A backend that sends structured events to the systemd journal with `sd_journal_sendv`.
///
/// Each event carries `MESSAGE=`, `PRIORITY=` (the syslog level, for `journalctl -p`), `SYSLOG_IDENTIFIER=`,
/// and every structured field under its name upper-cased (`DEVICE=9ff167`), so that
/// `journalctl -u empalinkd DEVICE=9ff167` selects one wristband. Field names are made valid for the journal:
/// characters other than `A-Z`, `0-9` and `_` become `_`, a leading `_` (reserved for trusted fields) or digit
/// gets an `F` in front, and names are cut at 64 characters.
///
/// When the journal refuses an event (its socket is full, or the process is sandboxed away from it) the event
/// goes to the fallback backend instead and ``failures`` counts it; logging never stops the daemon. A missing
/// journal socket is not a refusal: libsystemd then drops the event and reports success, which is why
/// ``LogBackend/fromEnvironment()`` picks this backend only when systemd connected stderr to the journal.
public final class JournaldLogHandler: LogHandler {
    /// Sends one event's fields; returns 0 or a negative errno, as `sd_journal_sendv`.
    typealias Sender = @Sendable (UnsafeBufferPointer<iovec>) -> CInt

    /// The `SYSLOG_IDENTIFIER` of every event.
    public let identifier: String
    private let fallback: (any LogHandler)?
    private let send: Sender
    private let failureCount = Atomic<Int>(0)

    /// Creates a journal backend.
    ///
    /// - Parameters:
    ///   - identifier: `SYSLOG_IDENTIFIER`, e.g. `empalinkd`.
    ///   - fallback: where events go when the journal refuses them; `nil` drops them.
    public convenience init(identifier: String, fallback: (any LogHandler)? = StderrLogHandler()) {
        self.init(identifier: identifier, fallback: fallback) { vectors in
            sd_journal_sendv(vectors.baseAddress, CInt(vectors.count))
        }
    }

    init(identifier: String, fallback: (any LogHandler)?, send: @escaping Sender) {
        self.identifier = identifier
        self.fallback = fallback
        self.send = send
    }

    /// How many events the journal refused since start.
    public var failures: Int { self.failureCount.load(ordering: .relaxed) }

    public func log(event: LogEvent) {
        let entries = Self.entries(for: event, identifier: self.identifier)
        // One buffer for all fields, one iovec per field pointing into it.
        var buffer: [UInt8] = []
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(entries.count)
        for entry in entries {
            let start = buffer.count
            buffer.append(contentsOf: entry.utf8)
            ranges.append(start..<buffer.count)
        }
        let result = buffer.withUnsafeMutableBytes { bytes -> CInt in
            guard let base = bytes.baseAddress else { return -EINVAL }
            let vectors = ranges.map { iovec(iov_base: base + $0.lowerBound, iov_len: $0.count) }
            return vectors.withUnsafeBufferPointer { self.send($0) }
        }
        if result < 0 {
            self.failureCount.add(1, ordering: .relaxed)
            self.fallback?.log(event: event)
        }
    }

    /// The `NAME=value` entries sent for `event`.
    static func entries(for event: LogEvent, identifier: String) -> [String] {
        var entries = [
            "MESSAGE=" + event.message,
            "PRIORITY=" + String(event.level.syslogPriority),
            "SYSLOG_IDENTIFIER=" + identifier,
        ]
        for field in event.fields {
            entries.append(Self.fieldName(field.key) + "=" + field.value)
        }
        return entries
    }

    /// `key` as a valid journal field name (see the type's documentation).
    static func fieldName(_ key: String) -> String {
        var name = ""
        for scalar in key.unicodeScalars {
            switch scalar {
            case "a"..."z": name.unicodeScalars.append(Unicode.Scalar(scalar.value - 32) ?? "_")
            case "A"..."Z", "0"..."9", "_": name.unicodeScalars.append(scalar)
            default: name += "_"
            }
        }
        if name.isEmpty || name.hasPrefix("_") || name.first?.isNumber == true {
            name = "F" + name
        }
        return String(name.prefix(64))
    }
}
