#if canImport(Glibc)
import Glibc
#endif

/// Line output for command-line programs: stdout for results, stderr for diagnostics.
///
/// Writes go straight to the descriptors (no stdio buffering), so the order of stdout and stderr lines is
/// the order of the calls, and nothing is lost when the process exits with `exit(_:)`.
public enum Console {
    /// Writes `text` followed by a newline to standard output.
    public static func out(_ text: String) {
        try? FileDescriptor.standardOutput.writeAll(text + "\n")
    }

    /// Writes `text` followed by a newline to standard error.
    public static func err(_ text: String) {
        try? FileDescriptor.standardError.writeAll(text + "\n")
    }
}
