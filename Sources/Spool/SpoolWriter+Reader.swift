#if canImport(Glibc)
import Glibc
#endif
import Posix

extension SpoolWriter {
    /// Reads ahead for replay (writer thread): records from `request.fromSequence` on, oldest first, walking
    /// the segments in order. Keeps its position, so consecutive requests read each byte once.
    func serve(_ request: SpoolReadRequest) {
        self.flush()
        var result = SpoolReadResult(
            generation: request.generation, fromSequence: request.fromSequence, records: [], scannedThrough: nil,
            corruptBytes: 0
        )
        var bytes = 0
        let resume = self.readerSegment == request.segment
            && (self.readerLastSequence.map { $0 < request.fromSequence } ?? false)
        if !resume {
            self.switchReader(to: request.segment)
        }
        var exhausted = false
        scanning: while true {
            guard let segment = self.readerSegment else {
                exhausted = true
                break
            }
            if self.readerFD == nil {
                self.readerFD = try? FileDescriptor.open(
                    SpoolDirectory.segmentPath(self.directory, segment), flags: O_RDONLY | O_NOFOLLOW
                )
            }
            let fileEnd: Int
            if self.readerFD == nil {
                fileEnd = 0
            } else if segment == self.currentSegment {
                fileEnd = self.currentSize
            } else if let fd = self.readerFD, let size = try? fd.size() {
                fileEnd = size
            } else {
                fileEnd = 0
            }
            while self.readerOffset < fileEnd {
                if result.records.count >= request.maxRecords || bytes >= request.maxBytes { break scanning }
                guard let fd = self.readerFD else { break }
                let want = min(self.readBuffer.count, fileEnd - self.readerOffset)
                let count: Int
                do throws(Errno) {
                    count = try fd.readFully(
                        into: UnsafeMutableRawBufferPointer(rebasing: self.readBuffer[0..<want]), at: self.readerOffset
                    )
                } catch {
                    result.corruptBytes += fileEnd - self.readerOffset
                    self.readerOffset = fileEnd
                    break
                }
                if count == 0 { break }
                let chunk = UnsafeRawBufferPointer(rebasing: self.readBuffer[0..<count])
                var position = 0
                parsing: while position < count {
                    if result.records.count >= request.maxRecords || bytes >= request.maxBytes { break }
                    switch SpoolFrame.decode(chunk, at: position) {
                    case .valid(let header):
                        if header.sequence >= request.fromSequence {
                            result.records.append(Self.record(header, in: chunk))
                            bytes += header.frameSize
                        }
                        self.readerLastSequence = header.sequence
                        position += header.frameSize
                    case .incomplete(let needed):
                        let fits = self.readerOffset + position + needed <= fileEnd && needed <= self.readBuffer.count
                        if fits && position > 0 { break parsing }  // read again from this frame's start
                        let next = SpoolScan.nextMagicCandidate(chunk, after: position)
                        result.corruptBytes += next - position
                        position = next
                    case .invalid:
                        let next = SpoolScan.nextMagicCandidate(chunk, after: position)
                        result.corruptBytes += next - position
                        position = next
                    }
                }
                self.readerOffset += position
            }
            if self.readerOffset < fileEnd { break }
            if segment == self.currentSegment {
                exhausted = true
                break
            }
            guard let next = self.segmentNumbers.first(where: { $0 > segment }) else {
                exhausted = true
                break
            }
            self.switchReader(to: next)
        }
        result.scannedThrough = exhausted ? self.writtenThrough : result.records.last.map(\.id)
        self.report(.read(result))
    }

    /// Points the reader at the start of segment `number`.
    private func switchReader(to number: UInt64) {
        self.readerFD?.close()
        self.readerFD = nil
        self.readerSegment = number
        self.readerOffset = 0
        self.readerLastSequence = nil
    }

    private static func record(_ header: SpoolFrame.Header, in chunk: UnsafeRawBufferPointer) -> SpoolRecord {
        SpoolRecord(
            id: header.sequence,
            timestamp: header.timestamp,
            key: SpoolStreamKey(index: 0),
            topic: Array(chunk[header.topicRange]),
            message: Array(chunk[header.messageRange]),
            qos: header.qos,
            retain: header.retain
        )
    }
}
