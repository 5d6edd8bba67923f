import Posix

/// Why an E4 connect CSV export could not be read. Each case names the file and, where it applies, the line, so
/// the operator sees one line that points at the problem.
public enum E4ExportError: Error, Equatable, CustomStringConvertible {
    /// The file could not be opened or read.
    case unreadable(path: String, errno: Errno)
    /// Line 1 (start time) or line 2 (sample rate) is missing or not a number.
    case badHeader(path: String, line: Int, expected: String)
    /// A sample line has a field that is not a finite number.
    case badValue(path: String, line: Int, text: String)
    /// A sample line has the wrong number of columns.
    case wrongColumnCount(path: String, line: Int, expected: Int, found: Int)
    /// The header is fine but there is not a single sample.
    case noSamples(path: String)

    public var description: String {
        switch self {
        case .unreadable(let path, let errno):
            return "\(path): error: cannot read: \(errno)"
        case .badHeader(let path, let line, let expected):
            return "\(path):\(line): error: expected \(expected) (E4 export: line 1 start time, line 2 sample rate)"
        case .badValue(let path, let line, let text):
            return "\(path):\(line): error: '\(text)' is not a number"
        case .wrongColumnCount(let path, let line, let expected, let found):
            return "\(path):\(line): error: expected \(expected) column\(expected == 1 ? "" : "s"), found \(found)"
        case .noSamples(let path):
            return "\(path): error: no samples after the two header lines"
        }
    }
}
