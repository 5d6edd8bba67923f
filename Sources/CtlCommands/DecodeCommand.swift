import E4
import EmpaLink
import Posix

/// `empalinkctl decode --capture FILE`: decodes a raw notification capture (SPEC §6.4) with the same decoders,
/// clocks and IBI engine as the live path, as JSON lines.
public enum DecodeCommand: CtlCommand {
    public static let name = "decode"
    public static let summary = "decode a raw notification capture to JSON lines (same code as the live path)"
    public static let usage = """
        empalinkctl decode --capture FILE
          One JSON object per line: {"stream":"bvp","t":T0,"fs":64,"v":[...]} for sampled streams
          (sample i at T0 + i/fs), "acc" with "v":[[x,y,z],...], "ibi"/"hr" {"t":T,"v":X}, "battery", "tag".
          A summary with packet, loss and decode-error counts goes to stderr.
        """

    public static func run(arguments: [String]) -> Int32 {
        guard arguments.count == 2, arguments[0] == "--capture", !arguments[1].isEmpty else {
            Console.err("decode: expected --capture FILE")
            Console.err("usage: \(self.usage)")
            return 2
        }
        let path = arguments[1]
        let bytes: [UInt8]
        do {
            bytes = try readFile(atPath: path, limit: 1 << 30)
        } catch {
            Console.err("decode: \(path): error: cannot read: \(error)")
            return 1
        }
        var reader = E4CaptureReader(bytes: bytes)
        var streams = DeviceStreams()
        var sink = JSONLinesSink()
        var records = 0
        var unknown = 0
        while true {
            let record: E4CaptureRecord
            do throws(E4CaptureError) {
                guard let next = try reader.next() else { break }
                record = next
            } catch {
                sink.flush()
                Console.err("decode: \(path): error: \(error) (after \(records) records)")
                return 2
            }
            records += 1
            guard let stream = record.stream else {
                unknown += 1
                continue
            }
            let arrival = Double(record.arrivalMicros) / 1e6
            bytes.withUnsafeBytes { raw in
                let payload = UnsafeRawBufferPointer(rebasing: raw[record.payload.clamped(to: 0..<raw.count)])
                streams.receive(stream, payload, arrival: arrival, into: &sink)
            }
        }
        sink.flush()
        let stats = streams.statistics
        Console.err("decode: \(records) records, \(stats.packets) packets, \(stats.lostPackets) lost, "
                        + "\(stats.duplicates) duplicates, \(stats.decodeErrors) decode errors, "
                        + "\(unknown) of unknown characteristics")
        return 0
    }
}

/// Writes decoded data as JSON lines, buffered.
struct JSONLinesSink: DecodedStreamSink {
    final class Buffer {
        var text = ""
    }

    let buffer = Buffer()

    func emit(_ line: String) {
        self.buffer.text += line
        self.buffer.text += "\n"
        if self.buffer.text.utf8.count > 1 << 16 { self.flush() }
    }

    func flush() {
        guard !self.buffer.text.isEmpty else { return }
        try? FileDescriptor.standardOutput.writeAll(self.buffer.text)
        self.buffer.text = ""
    }

    func samples(_ stream: SampledStream, _ values: UnsafeBufferPointer<Float>, t0: Double, fs: Double) {
        self.emit("{\"stream\":\"\(stream.rawValue)\",\"t\":\(t0),\"fs\":\(Int(fs)),\"v\":["
                      + values.map { "\($0)" }.joined(separator: ",") + "]}")
    }

    /// A capture's decode shows what the wristband sent: the raw BVP.
    func bvp(raw: UnsafeBufferPointer<Float>, filtered: UnsafeBufferPointer<Float>, t0: Double, fs: Double) {
        self.samples(.bvp, raw, t0: t0, fs: fs)
    }

    func acceleration(x: UnsafeBufferPointer<Int8>, y: UnsafeBufferPointer<Int8>, z: UnsafeBufferPointer<Int8>,
                      t0: Double, fs: Double) {
        let triples = (0..<min(x.count, y.count, z.count)).map { "[\(x[$0]),\(y[$0]),\(z[$0])]" }
        self.emit("{\"stream\":\"acc\",\"t\":\(t0),\"fs\":\(Int(fs)),\"v\":[" + triples.joined(separator: ",") + "]}")
    }

    func ibi(_ seconds: Float, at time: Double) { self.emit("{\"stream\":\"ibi\",\"t\":\(time),\"v\":\(seconds)}") }
    func heartRate(_ bpm: Float, at time: Double) { self.emit("{\"stream\":\"hr\",\"t\":\(time),\"v\":\(bpm)}") }
    func battery(_ level: Float, at time: Double) { self.emit("{\"stream\":\"battery\",\"t\":\(time),\"v\":\(level)}") }
    func tag(at time: Double) { self.emit("{\"stream\":\"tag\",\"t\":\(time)}") }
}
