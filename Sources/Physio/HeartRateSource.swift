/// Where a published heart rate came from, so consumers can tell a beat-derived value from a spectral one.
public enum HeartRateSource: UInt8, Sendable, Equatable, CustomStringConvertible {
    /// 60 / mean of the clean intervals that ended in the preceding window (``HeartRateTracker``): precise, but only
    /// where beats were clean — mostly at rest.
    case beats = 0
    /// The pulse's fundamental in the spectrum of the artefact-reduced BVP over the last 8 s, tracked through motion
    /// with the accelerometer's frequencies set aside (``SpectralHeartRate``).
    case spectral = 1
    /// Reported by the device itself (a Heart Rate Service strap's own bpm); the engine never produces it.
    case device = 2

    public var description: String {
        switch self {
        case .beats: "beats"
        case .spectral: "spectral"
        case .device: "device"
        }
    }
}
