import Posix

/// One E4 connect CSV export (`BVP.csv`, `ACC.csv`, …): line 1 the session start in unix seconds, line 2 the
/// sample rate in Hz (both repeated per column in multi-column files), then one sample per line.
public struct E4Export: Sendable, Equatable {
    /// Session start, seconds since 1970.
    public var start: Double
    /// Sample rate in Hz.
    public var rate: Double
    /// Columns per sample (BVP 1, ACC 3).
    public var columns: Int
    /// Samples, row-major: sample `i`, column `c` is at `i * columns + c`.
    public var values: [Double]

    /// Number of samples (rows).
    public var count: Int { self.columns > 0 ? self.values.count / self.columns : 0 }

    /// Time of sample `index`, seconds since 1970.
    public func time(of index: Int) -> Double {
        self.start + Double(index) / self.rate
    }

    /// Reads and parses an export file.
    ///
    /// - Parameters:
    ///   - path: the CSV file.
    ///   - columns: the expected columns per sample line.
    /// - Throws: ``E4ExportError``.
    public static func read(path: String, columns: Int) throws(E4ExportError) -> E4Export {
        let bytes: [UInt8]
        do {
            bytes = try readFile(atPath: path, limit: 512 << 20)
        } catch {
            throw .unreadable(path: path, errno: error)
        }
        return try Self.parse(bytes, path: path, columns: columns)
    }

    /// Parses export text.
    ///
    /// - Parameters:
    ///   - bytes: the file's contents (UTF-8; `\n` or `\r\n` line ends; blank lines are skipped).
    ///   - path: used in error messages.
    ///   - columns: the expected columns per sample line.
    /// - Throws: ``E4ExportError``.
    public static func parse(_ bytes: [UInt8], path: String, columns: Int) throws(E4ExportError) -> E4Export {
        var start: Double?
        var rate: Double?
        var values: [Double] = []
        values.reserveCapacity(bytes.count / 6)
        var lineNumber = 0
        var lineStart = 0
        var fields: [Double] = []
        fields.reserveCapacity(8)
        while lineStart < bytes.count {
            var lineEnd = lineStart
            while lineEnd < bytes.count && bytes[lineEnd] != UInt8(ascii: "\n") { lineEnd += 1 }
            lineNumber += 1
            let line = bytes[lineStart..<lineEnd]
            lineStart = lineEnd + 1
            let (parsed, bad) = Self.fields(of: line, into: &fields)
            if parsed == 0 && bad == nil { continue }  // blank line
            if start == nil || rate == nil {
                let what = start == nil ? "the session start (unix seconds)" : "the sample rate (Hz)"
                guard bad == nil, let first = fields.first, first.isFinite else {
                    throw .badHeader(path: path, line: lineNumber, expected: what)
                }
                if start == nil {
                    start = first
                } else {
                    guard first > 0 else { throw .badHeader(path: path, line: lineNumber, expected: what) }
                    rate = first
                }
                continue
            }
            if let bad { throw .badValue(path: path, line: lineNumber, text: bad) }
            guard parsed == columns else {
                throw .wrongColumnCount(path: path, line: lineNumber, expected: columns, found: parsed)
            }
            values.append(contentsOf: fields)
        }
        guard let start else { throw .badHeader(path: path, line: max(lineNumber, 1), expected: "the session start") }
        guard let rate else { throw .badHeader(path: path, line: max(lineNumber, 1), expected: "the sample rate") }
        guard !values.isEmpty else { throw .noSamples(path: path) }
        return E4Export(start: start, rate: rate, columns: columns, values: values)
    }

    /// Splits one line on commas into finite numbers.
    ///
    /// - Returns: the number of fields, and the text of the first field that is not a finite number.
    private static func fields(of line: ArraySlice<UInt8>, into fields: inout [Double]) -> (Int, String?) {
        fields.removeAll(keepingCapacity: true)
        var trimmedEnd = line.endIndex
        while trimmedEnd > line.startIndex, Self.isSpace(line[trimmedEnd - 1]) { trimmedEnd -= 1 }
        if trimmedEnd == line.startIndex { return (0, nil) }
        var fieldStart = line.startIndex
        var count = 0
        while fieldStart <= trimmedEnd {
            var fieldEnd = fieldStart
            while fieldEnd < trimmedEnd && line[fieldEnd] != UInt8(ascii: ",") { fieldEnd += 1 }
            var a = fieldStart
            var b = fieldEnd
            while a < b, Self.isSpace(line[a]) { a += 1 }
            while b > a, Self.isSpace(line[b - 1]) { b -= 1 }
            let text = String(decoding: line[a..<b], as: UTF8.self)
            count += 1
            guard let value = Double(text), value.isFinite else { return (count, text) }
            fields.append(value)
            fieldStart = fieldEnd + 1
        }
        return (count, nil)
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r")
    }
}
