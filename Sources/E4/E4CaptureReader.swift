/// Iterates the records of a whole capture held in memory.
///
/// It stops at the first error: the records before it are good, the error names the offset where reading
/// ended, and later calls return `nil`. The capture format has no sync marker, so there is nothing sound to
/// resynchronise on.
public struct E4CaptureReader: Sendable {
    /// The capture.
    public let bytes: [UInt8]
    /// Where the next record starts.
    public private(set) var offset = 0
    private var failed = false

    /// A reader at the start of `bytes`.
    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The next record, or `nil` at the end (or after an error).
    ///
    /// - Throws: ``E4CaptureError`` for a torn tail or a bad length, once.
    public mutating func next() throws(E4CaptureError) -> E4CaptureRecord? {
        guard !self.failed else { return nil }
        do throws(E4CaptureError) {
            let record = try E4Capture.record(in: self.bytes.span.bytes, at: self.offset)
            if let record { self.offset = record.nextOffset }
            return record
        } catch {
            self.failed = true
            throw error
        }
    }

    /// Calls `body` with a record's payload as a borrowed ``RawSpan``, ready for a decoder.
    public func withPayload<Result: ~Copyable, Failure: Error>(
        of record: E4CaptureRecord,
        _ body: (RawSpan) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let clamped = record.payload.clamped(to: 0..<self.bytes.count)
        return try body(self.bytes.span.bytes.extracting(clamped))
    }
}
