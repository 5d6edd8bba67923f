import E4
import EmpaLink

/// The capture reader (`empalinkctl capture`/`decode`, E4 tests): the input is a capture file. Every record it
/// yields is decoded by the E4 profile, as `empalinkctl decode` does, under the channel of its characteristic.
enum CaptureFuzz {
    static let target = FuzzTarget(
        name: "capture",
        summary: "a capture file: E4CaptureReader, each record's payload into the E4 profile's decoder"
    ) { bytes in
        var reader = E4CaptureReader(bytes: Array(bytes))
        let decoder = profile.makeDecoder()
        var sink = CheckingSink()
        while true {
            let record: E4CaptureRecord?
            do throws(E4CaptureError) {
                record = try reader.next()
            } catch {
                _ = "\(error)"
                return
            }
            guard let record else { return }
            precondition(record.payload.lowerBound >= record.offset && record.nextOffset <= reader.bytes.count,
                         "record \(record) outside a capture of \(reader.bytes.count) bytes")
            guard let stream = record.stream,
                  let channel = channels.firstIndex(where: { $0.uuid == stream.characteristic }) else { continue }
            let arrival = Double(record.arrivalMicros) / 1_000_000
            reader.withPayload(of: record) { payload in
                payload.withUnsafeBytes { decoder.receive(channel: channel, $0, arrival: arrival, into: &sink) }
            }
        }
    }

    static let profile = E4DeviceProfile()
    static let channels = E4DeviceProfile().characteristics
}
