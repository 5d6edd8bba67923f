#if canImport(Glibc)
import Glibc
#endif
import EmpaLink
import Physio
import Spool

/// Turns one wristband's data into MQTT messages (SPEC §10): per-stream batches in preallocated storage,
/// formatted into the shared JSON buffer and handed to the ``Outbox``. Nothing here allocates per notification.
///
/// Each connection session gets a new random `sid`; `seq` counts from 0 per (`sid`, stream).
final class DevicePublisher: EmpaticaDeviceDelegate {
    /// The agent's side: which streams, when to flush, device status (``DevicePublisherHost``).
    unowned let host: any DevicePublisherHost
    /// Where formatted messages go (the ``Outbox``).
    let sink: any MessageSink
    /// The buffer every message is formatted into, shared by the agent's publishers (one message at a time).
    let json: JSONBuffer
    let serial: String
    var label: String
    /// NUL-terminated topics `P/A/S/<stream>`, by stream.
    let topics: [StreamKind: ContiguousArray<CChar>]
    let statusTopic: ContiguousArray<CChar>
    /// Spool keys of the device's streams, so spooled and live records of a stream stay in order.
    let spoolKeys: [StreamKind: SpoolStreamKey]
    /// `"sid":"…"` of the current session, preformatted.
    var sidField: [UInt8] = []
    var sid = ""
    /// Whether ``sid`` was drawn when the current attempt began (`connecting`), so `connected` keeps it.
    var sessionDrawnForAttempt = false
    /// The retained `P/A/S/status` as last published, so an unchanged one is not sent again.
    var publishedStatus = ""
    /// The status `statusSince` belongs to, and when it began (seconds since 1970).
    var statusSeen: DeviceStatus?
    var statusSince: Double?

    /// Every stream, in flush order.
    static let streamKinds = StreamKind.allCases

    let bvp = SampleBatch(fs: 64, capacity: 1024)
    let gsr = SampleBatch(fs: 4, capacity: 64)
    let temp = SampleBatch(fs: 4, capacity: 64)
    let acc = AccelerationBatch(fs: 32, capacity: 512)
    let ibi = EventBatch(capacity: 128)
    let hr = EventBatch(capacity: 128)
    let battery = EventBatch(capacity: 16)
    let tag = EventBatch(capacity: 64)
    /// Sensor contact changes (1 detected, 0 lost) of a heart-rate sensor.
    let contact = EventBatch(capacity: 16)

    /// - Parameters:
    ///   - topicBase: `P/A`; the device's topics are `P/A/S/<stream>`.
    init(host: any DevicePublisherHost, sink: any MessageSink, json: JSONBuffer, topicBase: String, serial: String,
         label: String) {
        self.host = host
        self.sink = sink
        self.json = json
        self.serial = serial
        self.label = label
        let base = topicBase + "/" + serial
        var topics: [StreamKind: ContiguousArray<CChar>] = [:]
        for kind in StreamKind.allCases {
            topics[kind] = ContiguousArray((base + "/" + kind.rawValue).utf8CString)
        }
        self.topics = topics
        var keys: [StreamKind: SpoolStreamKey] = [:]
        for kind in StreamKind.allCases {
            keys[kind] = sink.key(serial: serial, stream: kind)
        }
        self.spoolKeys = keys
        self.statusTopic = ContiguousArray((base + "/status").utf8CString)
        self.newSession()
    }

    /// A new connection session: new `sid`, every `seq` back to 0.
    func newSession() {
        var random = SystemRandomNumberGenerator()
        let hex = Array("0123456789abcdef".utf8)
        self.sid = String(decoding: (0..<16).map { _ in hex[Int(random.next() & 0xF)] }, as: UTF8.self)
        self.sidField = Array("\"sid\":\"\(self.sid)\"".utf8)
        for batch in [self.bvp, self.gsr, self.temp] {
            batch.count = 0
            batch.seq = 0
        }
        self.acc.count = 0
        self.acc.seq = 0
        for batch in [self.ibi, self.hr, self.battery, self.tag, self.contact] {
            batch.count = 0
            batch.seq = 0
        }
    }

    func enabled(_ kind: StreamKind) -> Bool { self.host.enabledStreams.contains(kind) }

    /// The batch of an event stream (`ibi`, `hr`, `battery`, `tag`, `contact`); `tag` for any other.
    func eventBatch(_ kind: StreamKind) -> EventBatch {
        switch kind {
        case .ibi: self.ibi
        case .hr: self.hr
        case .battery: self.battery
        case .contact: self.contact
        default: self.tag
        }
    }

    // MARK: EmpaticaDeviceDelegate (hot path)

    // The delegate calls forward to the device-free ``DecodedStreamSink`` half (DevicePublisher+Sink.swift), which
    // is what batches; ``AgentPipelineProbe`` drives that half directly (no Bluetooth device exists there).

    func didReceiveSamples(_ stream: SampledStream, values: UnsafeBufferPointer<Float>, t0: Double, fs: Double,
                           from device: EmpaticaDeviceManager) {
        self.samples(stream, values, t0: t0, fs: fs)
    }

    func didReceiveBVPSamples(raw: UnsafeBufferPointer<Float>, filtered: UnsafeBufferPointer<Float>, t0: Double,
                              fs: Double, from device: EmpaticaDeviceManager) {
        self.bvp(raw: raw, filtered: filtered, t0: t0, fs: fs)
    }

    func didReceiveAccelerationSamples(x: UnsafeBufferPointer<Int8>, y: UnsafeBufferPointer<Int8>,
                                       z: UnsafeBufferPointer<Int8>, t0: Double, fs: Double,
                                       from device: EmpaticaDeviceManager) {
        self.acceleration(x: x, y: y, z: z, t0: t0, fs: fs)
    }

    func didReceiveIBI(_ ibi: Float, timestamp: Double, from device: EmpaticaDeviceManager) {
        self.ibi(ibi, at: timestamp)
    }

    func didReceiveHeartRate(_ bpm: Float, timestamp: Double, from device: EmpaticaDeviceManager) {
        self.heartRate(bpm, at: timestamp)
    }

    func didReceiveHeartRate(_ bpm: Float, confidence: Float, source: HeartRateSource, timestamp: Double,
                             from device: EmpaticaDeviceManager) {
        self.heartRate(bpm, confidence: confidence, source: source, at: timestamp)
    }

    func didReceiveBatteryLevel(_ level: Float, timestamp: Double, from device: EmpaticaDeviceManager) {
        self.battery(level, at: timestamp)
        self.host.batteryChanged(device)
    }

    func didReceiveTag(at timestamp: Double, from device: EmpaticaDeviceManager) {
        self.tag(at: timestamp)
    }

    func didReceiveContact(_ detected: Bool, timestamp: Double, from device: EmpaticaDeviceManager) {
        self.contact(detected, at: timestamp)
    }

    func didUpdateDeviceInformation(for device: EmpaticaDeviceManager) {
        self.host.deviceInformationChanged(device)
    }

    func didUpdateDeviceStatus(_ status: DeviceStatus, for device: EmpaticaDeviceManager) {
        // The session starts with the attempt: the wristband may stream before the status says connected (the
        // rest of its profile is still being set up), and a batch flushed then belongs to this session too.
        // Drawing the sid at `connected` published that first batch under a session of its own (issue #21).
        if status == .connecting {
            self.newSession()
            self.sessionDrawnForAttempt = true
        } else if status == .connected {
            if !self.sessionDrawnForAttempt { self.newSession() }
            self.sessionDrawnForAttempt = false
        } else if status == .disconnected || status == .disconnecting {
            self.flushAll()
            self.sessionDrawnForAttempt = false
        }
        self.host.deviceStatusChanged(device)
    }

    // MARK: Publishing

    /// Publishes every pending batch.
    ///
    /// - Returns: whether anything was published.
    @discardableResult
    func flushAll() -> Bool {
        var published = false
        // Indexed over a stored array: in a debug build `allCases` makes its array on every call and the
        // unspecialised iterator allocates; the batch timer runs this per tick.
        for index in 0..<Self.streamKinds.count where self.flush(Self.streamKinds[index]) { published = true }
        return published
    }

    /// Formats the stream's pending batch into the shared buffer and publishes it.
    ///
    /// - Returns: whether there was a batch to publish.
    @discardableResult
    func flush(_ kind: StreamKind) -> Bool {
        let json = self.json
        json.reset()
        json.append(UInt8(ascii: "{"))
        json.append(self.sidField)
        json.append(",\"seq\":")
        switch kind {
        case .bvp, .gsr, .temp:
            let batch = kind == .bvp ? self.bvp : kind == .gsr ? self.gsr : self.temp
            guard batch.count > 0 else { return false }
            json.append(integer: batch.seq)
            json.append(",\"t\":")
            json.append(batch.t0, decimals: 6)
            json.append(",\"fs\":")
            json.append(integer: Int64(batch.fs))
            json.append(",\"v\":[")
            for index in 0..<batch.count {
                if index > 0 { json.append(UInt8(ascii: ",")) }
                json.append(Double(batch.values[index]), decimals: kind.decimals)
            }
            batch.seq += 1
            batch.count = 0
        case .acc:
            guard self.acc.count > 0 else { return false }
            json.append(integer: self.acc.seq)
            json.append(",\"t\":")
            json.append(self.acc.t0, decimals: 6)
            json.append(",\"fs\":32,\"v\":[")
            for index in 0..<self.acc.count {
                json.append(index > 0 ? ",[" : "[")
                json.append(integer: Int64(self.acc.xyz[index * 3]))
                json.append(UInt8(ascii: ","))
                json.append(integer: Int64(self.acc.xyz[index * 3 + 1]))
                json.append(UInt8(ascii: ","))
                json.append(integer: Int64(self.acc.xyz[index * 3 + 2]))
                json.append(UInt8(ascii: "]"))
            }
            self.acc.seq += 1
            self.acc.count = 0
        case .ibi, .hr, .battery, .tag, .contact:
            let batch = self.eventBatch(kind)
            guard batch.count > 0 else { return false }
            json.append(integer: batch.seq)
            if kind == .hr {
                json.append(",\"source\":\"")
                json.append(batch.source.wireName)
                json.append(UInt8(ascii: "\""))
            }
            json.append(",\"v\":[")
            for index in 0..<batch.count {
                if index > 0 { json.append(UInt8(ascii: ",")) }
                if kind == .tag {
                    json.append(batch.times[index], decimals: 6)
                } else {
                    json.append(UInt8(ascii: "["))
                    json.append(batch.times[index], decimals: 6)
                    json.append(UInt8(ascii: ","))
                    json.append(Double(batch.values[index]), decimals: kind.decimals)
                    json.append(UInt8(ascii: "]"))
                }
            }
            if kind == .hr {
                // Parallel to `v`, so readers of `[[t,bpm],…]` pairs are unaffected.
                json.append("],\"confidence\":[")
                for index in 0..<batch.count {
                    if index > 0 { json.append(UInt8(ascii: ",")) }
                    json.append(Double(batch.confidences[index]), decimals: 2)
                }
            }
            batch.seq += 1
            batch.count = 0
        }
        json.append("]}")
        guard let topic = self.topics[kind] else { return true }
        topic.withUnsafeBufferPointer { pointer in
            guard let base = pointer.baseAddress else { return }
            self.sink.publish(topic: base, key: self.spoolKeys[kind], payload: json)
        }
        return true
    }
}
