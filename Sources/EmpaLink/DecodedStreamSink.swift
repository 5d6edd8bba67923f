import Physio

/// Where ``DeviceStreams/receive(_:_:arrival:into:)`` puts decoded data: the live device delegate, or
/// `empalinkctl decode` replaying a capture. Generic, so the live path has no existential boxing.
public protocol DecodedStreamSink {
    func samples(_ stream: SampledStream, _ values: UnsafeBufferPointer<Float>, t0: Double, fs: Double)
    /// One packet's BVP, decoded (`raw`) and with the movement artefact the accelerometer explains subtracted
    /// (`filtered`, ``MotionArtefactFilter``), sample for sample; by default the filtered samples go to
    /// ``samples(_:_:t0:fs:)`` (SPEC §19: the published BVP is filtered).
    func bvp(raw: UnsafeBufferPointer<Float>, filtered: UnsafeBufferPointer<Float>, t0: Double, fs: Double)
    func acceleration(x: UnsafeBufferPointer<Int8>, y: UnsafeBufferPointer<Int8>, z: UnsafeBufferPointer<Int8>,
                      t0: Double, fs: Double)
    func ibi(_ seconds: Float, at time: Double)
    func heartRate(_ bpm: Float, at time: Double)
    /// A heart rate with how far it can be trusted (0…1) and where it came from; by default forwarded to
    /// ``heartRate(_:at:)`` without them.
    func heartRate(_ bpm: Float, confidence: Float, source: HeartRateSource, at time: Double)
    func battery(_ level: Float, at time: Double)
    func tag(at time: Double)
    /// The sensor's skin contact changed (or became known): `true` detected, `false` lost.
    func contact(_ detected: Bool, at time: Double)
}

extension DecodedStreamSink {
    /// Sinks that do not follow sensor contact ignore it.
    public func contact(_ detected: Bool, at time: Double) {}
}

extension DecodedStreamSink {
    public func bvp(raw: UnsafeBufferPointer<Float>, filtered: UnsafeBufferPointer<Float>, t0: Double, fs: Double) {
        self.samples(.bvp, filtered, t0: t0, fs: fs)
    }

    public func heartRate(_ bpm: Float, confidence: Float, source: HeartRateSource, at time: Double) {
        self.heartRate(bpm, at: time)
    }
}
