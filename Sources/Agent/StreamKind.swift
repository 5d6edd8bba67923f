import Physio

/// The MQTT data streams of a wristband (SPEC §10, §16), with their topic suffix. A heart-rate sensor publishes
/// `hr`, `ibi`, `battery` and `contact`; an E4 all but `contact`.
public enum StreamKind: String, CaseIterable, Sendable {
    case bvp, gsr, acc, temp, ibi, hr, battery, tag, contact

    /// Decimals written for values of this stream: enough for the sensor's resolution, no more.
    var decimals: Int {
        switch self {
        case .bvp: return 3
        case .gsr: return 4
        case .temp: return 2
        case .ibi: return 4
        case .hr: return 1
        case .battery: return 2
        case .acc, .tag, .contact: return 0
        }
    }
}

extension HeartRateSource {
    /// The `source` of an `hr` message (SPEC §10): `beats`, `spectral`, `device`.
    var wireName: StaticString {
        switch self {
        case .beats: "beats"
        case .spectral: "spectral"
        case .device: "device"
        }
    }
}
