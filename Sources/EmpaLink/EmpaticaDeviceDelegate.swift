import Physio

/// Receives a wristband's data and status (the SDK's `EmpaticaDeviceDelegate`), on the event-loop thread.
///
/// Timestamps are seconds since 1970. Every method has a default that does nothing. The batch methods are the
/// hot path: their defaults fan out to the per-sample methods; an implementation that overrides them gets each
/// notification's samples as one borrowed buffer, valid only during the call, with no allocation.
public protocol EmpaticaDeviceDelegate: AnyObject {
    func didReceiveTag(at timestamp: Double, from device: EmpaticaDeviceManager)
    func didReceiveIBI(_ ibi: Float, timestamp: Double, from device: EmpaticaDeviceManager)
    func didReceiveHeartRate(_ bpm: Float, timestamp: Double, from device: EmpaticaDeviceManager)
    /// A heart rate with how far it can be trusted (0…1: 1 from clean beats) and where it came from (beats,
    /// the BVP spectrum through motion); the default forwards to ``didReceiveHeartRate(_:timestamp:from:)``.
    func didReceiveHeartRate(_ bpm: Float, confidence: Float, source: HeartRateSource, timestamp: Double,
                             from device: EmpaticaDeviceManager)
    func didReceiveGSR(_ gsr: Float, timestamp: Double, from device: EmpaticaDeviceManager)
    func didReceiveBVP(_ bvp: Float, timestamp: Double, from device: EmpaticaDeviceManager)
    func didReceiveTemperature(_ temp: Float, timestamp: Double, from device: EmpaticaDeviceManager)
    func didReceiveAcceleration(x: Int8, y: Int8, z: Int8, timestamp: Double, from device: EmpaticaDeviceManager)
    func didReceiveBatteryLevel(_ level: Float, timestamp: Double, from device: EmpaticaDeviceManager)
    func didUpdateDeviceStatus(_ status: DeviceStatus, for device: EmpaticaDeviceManager)
    /// A heart-rate sensor's skin contact changed (or became known): `true` detected, `false` lost (SPEC §16).
    func didReceiveContact(_ detected: Bool, timestamp: Double, from device: EmpaticaDeviceManager)
    /// A value read once at session start changed ``EmpaticaDeviceManager/deviceInformation``.
    func didUpdateDeviceInformation(for device: EmpaticaDeviceManager)

    /// A notification's samples of a sampled stream (BVP, GSR, temperature): sample `i` at `t0 + i / fs`.
    func didReceiveSamples(_ stream: SampledStream, values: UnsafeBufferPointer<Float>, t0: Double, fs: Double,
                           from device: EmpaticaDeviceManager)
    /// A notification's BVP, decoded (`raw`) and artefact-reduced (`filtered`), sample for sample, at `t0 + i / fs`.
    func didReceiveBVPSamples(raw: UnsafeBufferPointer<Float>, filtered: UnsafeBufferPointer<Float>, t0: Double,
                              fs: Double, from device: EmpaticaDeviceManager)
    /// A notification's accelerometer samples (1/64 g): sample `i` at `t0 + i / fs`.
    func didReceiveAccelerationSamples(x: UnsafeBufferPointer<Int8>, y: UnsafeBufferPointer<Int8>,
                                       z: UnsafeBufferPointer<Int8>, t0: Double, fs: Double,
                                       from device: EmpaticaDeviceManager)
}

/// The sampled streams with float values.
public enum SampledStream: String, Sendable, Equatable {
    case bvp, gsr, temp
}

extension EmpaticaDeviceDelegate {
    public func didReceiveTag(at timestamp: Double, from device: EmpaticaDeviceManager) {}
    public func didReceiveIBI(_ ibi: Float, timestamp: Double, from device: EmpaticaDeviceManager) {}
    public func didReceiveHeartRate(_ bpm: Float, timestamp: Double, from device: EmpaticaDeviceManager) {}
    public func didReceiveHeartRate(_ bpm: Float, confidence: Float, source: HeartRateSource, timestamp: Double,
                                    from device: EmpaticaDeviceManager) {
        self.didReceiveHeartRate(bpm, timestamp: timestamp, from: device)
    }
    public func didReceiveGSR(_ gsr: Float, timestamp: Double, from device: EmpaticaDeviceManager) {}
    public func didReceiveBVP(_ bvp: Float, timestamp: Double, from device: EmpaticaDeviceManager) {}
    public func didReceiveTemperature(_ temp: Float, timestamp: Double, from device: EmpaticaDeviceManager) {}
    public func didReceiveAcceleration(x: Int8, y: Int8, z: Int8, timestamp: Double,
                                       from device: EmpaticaDeviceManager) {}
    public func didReceiveBatteryLevel(_ level: Float, timestamp: Double, from device: EmpaticaDeviceManager) {}
    public func didUpdateDeviceStatus(_ status: DeviceStatus, for device: EmpaticaDeviceManager) {}
    public func didReceiveContact(_ detected: Bool, timestamp: Double, from device: EmpaticaDeviceManager) {}
    public func didUpdateDeviceInformation(for device: EmpaticaDeviceManager) {}

    public func didReceiveSamples(_ stream: SampledStream, values: UnsafeBufferPointer<Float>, t0: Double,
                                  fs: Double, from device: EmpaticaDeviceManager) {
        for (index, value) in values.enumerated() {
            let timestamp = t0 + Double(index) / fs
            switch stream {
            case .bvp: self.didReceiveBVP(value, timestamp: timestamp, from: device)
            case .gsr: self.didReceiveGSR(value, timestamp: timestamp, from: device)
            case .temp: self.didReceiveTemperature(value, timestamp: timestamp, from: device)
            }
        }
    }

    /// One packet's BVP, decoded and artefact-reduced; by default the filtered samples go to
    /// ``didReceiveSamples(_:values:t0:fs:from:)`` and so to ``didReceiveBVP(_:timestamp:from:)``, "filtered to
    /// remove movement artifacts" (SPEC §19).
    public func didReceiveBVPSamples(raw: UnsafeBufferPointer<Float>, filtered: UnsafeBufferPointer<Float>,
                                     t0: Double, fs: Double, from device: EmpaticaDeviceManager) {
        self.didReceiveSamples(.bvp, values: filtered, t0: t0, fs: fs, from: device)
    }

    public func didReceiveAccelerationSamples(x: UnsafeBufferPointer<Int8>, y: UnsafeBufferPointer<Int8>,
                                              z: UnsafeBufferPointer<Int8>, t0: Double, fs: Double,
                                              from device: EmpaticaDeviceManager) {
        for index in 0..<min(x.count, y.count, z.count) {
            self.didReceiveAcceleration(x: x[index], y: y[index], z: z[index],
                                        timestamp: t0 + Double(index) / fs, from: device)
        }
    }
}
