import Physio
/// One heart-rate sensor's decoding state (SPEC §16): Heart Rate Measurement into `hr`, `ibi` and `contact`, Battery
/// Level into `battery`, the read-once strings into ``deviceInformation``.
///
/// RR intervals are the beat record and there is no flow counter, so losses are found in time: the beats are
/// chained (each notification's RR intervals continue the previous one's last beat), and arrival time the chain does
/// not cover, beyond ``uncoveredTolerance``, is counted as lost beats (``DecoderStatistics/lostPackets``), in units of
/// the last RR interval, less the usual beat-to-notification delay — never invented in the IBI stream. Losses
/// shorter than the tolerance cannot be told from a strap's once-a-second rhythm and are not counted. Each IBI is stamped at the beat that ends it, accumulated backwards from the
/// notification's arrival.
final class HRSProfileDecoder: ProfileDecoder {
    private(set) var statistics = DecoderStatistics()
    var reanchors: UInt64 { 0 }
    private(set) var deviceInformation = DeviceInformation()

    /// The chain's last beat, in arrival time (earliest-latency anchored); `nil` before the first RR interval or after
    /// contact was lost.
    private var chainEnd: Double?
    /// The last RR interval, s, the scale lost time is counted in.
    private var lastInterval = 0.0
    private var lastContact: HeartRateMeasurement.Contact?
    /// The time from a beat to the notification carrying it, beyond the quickest seen (a moving average over
    /// notifications without loss): half a second for a strap that notifies each second, until learnt.
    private var usualUncovered = 0.5

    /// Arrival time a chain may leave uncovered without a loss: a sensor notifies about once a second with the
    /// beats that ended since the last notification (HRS 1.0 §3.1.1.1), so up to a second passes between a beat and
    /// the notification that carries it; a quarter second more for delivery jitter.
    static let uncoveredTolerance = 1.25

    func receive<Sink: DecodedStreamSink>(channel: Int, _ bytes: UnsafeRawBufferPointer, arrival: Double,
                                          into sink: inout Sink) {
        switch HRSDeviceProfile.Channel(rawValue: channel) {
        case .measurement?: self.measurement(bytes, arrival: arrival, into: &sink)
        case .battery?:
            guard bytes.count >= 1, bytes[0] <= 100 else {
                self.statistics.decodeErrors &+= 1
                return
            }
            self.statistics.packets &+= 1
            sink.battery(Float(bytes[0]) / 100, at: arrival)
        case .location?:
            guard bytes.count == 1 else {
                self.statistics.decodeErrors &+= 1
                return
            }
            self.deviceInformation.bodySensorLocation = HRSDeviceProfile.locationName(bytes[0])
        case .manufacturer?: self.deviceInformation.manufacturer = Self.text(bytes)
        case .model?: self.deviceInformation.model = Self.text(bytes)
        case .serial?: self.deviceInformation.serialNumber = Self.text(bytes)
        case .firmware?: self.deviceInformation.firmware = Self.text(bytes)
        case nil: return
        }
    }

    func measurement<Sink: DecodedStreamSink>(_ bytes: UnsafeRawBufferPointer, arrival: Double,
                                              into sink: inout Sink) {
        let value: HeartRateMeasurement
        do throws(HeartRateMeasurementError) {
            value = try HeartRateMeasurement.parse(bytes)
        } catch {
            self.statistics.decodeErrors &+= 1
            return
        }
        self.statistics.packets &+= 1
        if value.contact != self.lastContact {
            self.lastContact = value.contact
            switch value.contact {
            case .detected: sink.contact(true, at: arrival)
            case .notDetected: sink.contact(false, at: arrival)
            case .notSupported: break
            }
        }
        // Without contact the sensor measures nothing: time passing is not beats lost, and the next chain starts anew.
        if value.contact == .notDetected { self.chainEnd = nil }
        // 0 bpm, which straps send while they measure nothing, is no heart rate.
        if value.heartRate > 0 {
            sink.heartRate(Float(value.heartRate), confidence: 1, source: .device, at: arrival)
        }
        guard value.rrCount > 0 else { return }
        var covered = 0.0
        for index in 0..<value.rrCount {
            covered += Double(value.rrInterval(index, in: bytes)) * HeartRateMeasurement.rrUnit
        }
        if let end = self.chainEnd {
            let uncovered = arrival - (end + covered)
            if uncovered > Self.uncoveredTolerance, self.lastInterval > 0 {
                // What the lost notifications carried: the uncovered time less this notification's usual share.
                let lost = max(1, Int(((uncovered - self.usualUncovered) / self.lastInterval).rounded()))
                self.statistics.lostPackets &+= UInt64(lost)
                self.chainEnd = arrival
            } else if uncovered < 0 {
                // The chain ran ahead of arrival (this notification came sooner after its beat): anchor here.
                self.chainEnd = arrival
            } else {
                self.chainEnd = end + covered
                self.usualUncovered += (uncovered - self.usualUncovered) / 16
            }
        } else {
            self.chainEnd = arrival
        }
        // Oldest first in the packet; the newest ends at arrival.
        var t = arrival - covered
        for index in 0..<value.rrCount {
            let seconds = Double(value.rrInterval(index, in: bytes)) * HeartRateMeasurement.rrUnit
            t += seconds
            guard seconds > 0 else {
                self.statistics.decodeErrors &+= 1
                continue
            }
            sink.ibi(Float(seconds), at: t)
            self.lastInterval = seconds
        }
    }

    func reset() {
        self.chainEnd = nil
        self.lastInterval = 0
        self.lastContact = nil
        self.usualUncovered = 0.5
    }

    /// A UTF-8 string characteristic, trailing NULs dropped (some devices pad), at most 64 bytes kept.
    static func text(_ bytes: UnsafeRawBufferPointer) -> String {
        var end = min(bytes.count, 64)
        while end > 0 && bytes[end - 1] == 0 { end -= 1 }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[0..<end]), as: UTF8.self)
    }
}
