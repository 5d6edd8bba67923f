import Posix

/// A backend that writes one line per event: `LEVEL: message key=value key=value`.
///
/// Each line goes out in a single `write(2)` without stdio buffering, so lines from different threads do not
/// interleave (a pipe keeps writes up to 4 KiB whole) and nothing is lost when the process exits. Newlines and
/// other control characters in messages and values are escaped, so one event is always one line; values
/// containing spaces, quotes or `=` are quoted.
public struct StderrLogHandler: LogHandler {
    /// Where lines go; standard error unless a test redirects them.
    public let fileDescriptor: FileDescriptor

    public init(fileDescriptor: FileDescriptor = .standardError) {
        self.fileDescriptor = fileDescriptor
    }

    public func log(event: LogEvent) {
        // A full or closed stderr must not stop the daemon; the event is dropped.
        try? self.fileDescriptor.writeAll(Self.format(event))
    }

    /// The line for `event`, with its trailing newline.
    public static func format(_ event: LogEvent) -> String {
        var line = event.level.name
        line += ": "
        Self.appendEscaped(event.message, to: &line)
        for field in event.fields {
            line += " "
            Self.appendEscaped(field.key, to: &line)
            line += "="
            if Self.needsQuotes(field.value) {
                line += "\""
                Self.appendEscaped(field.value, to: &line, escapingQuotes: true)
                line += "\""
            } else {
                line += field.value
            }
        }
        line += "\n"
        return line
    }

    private static func needsQuotes(_ value: String) -> Bool {
        value.isEmpty || value.unicodeScalars.contains { scalar in
            scalar == " " || scalar == "=" || scalar == "\"" || scalar == "\\" || Self.isControl(scalar)
        }
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.generalCategory == .control
    }

    /// Appends `text` with control characters escaped (and `"`, `\` too inside quotes).
    private static func appendEscaped(_ text: String, to line: inout String, escapingQuotes: Bool = false) {
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": line += "\\n"
            case "\t": line += "\\t"
            case "\r": line += "\\r"
            case "\"" where escapingQuotes: line += "\\\""
            case "\\" where escapingQuotes: line += "\\\\"
            default:
                if Self.isControl(scalar) {
                    line += "\\u{" + String(scalar.value, radix: 16) + "}"
                } else {
                    line.unicodeScalars.append(scalar)
                }
            }
        }
    }
}
