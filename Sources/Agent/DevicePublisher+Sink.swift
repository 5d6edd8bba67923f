import Physio
import EmpaLink

/// The batching half of the delegate: decoded data of one notification into the stream's batch, flushed at once
/// with `batch_ms` 0, when full, or when the samples do not continue the batch.
extension DevicePublisher: DecodedStreamSink {
    func samples(_ stream: SampledStream, _ values: UnsafeBufferPointer<Float>, t0: Double, fs: Double) {
        let kind: StreamKind
        let batch: SampleBatch
        switch stream {
        case .bvp: (kind, batch) = (.bvp, self.bvp)
        case .gsr: (kind, batch) = (.gsr, self.gsr)
        case .temp: (kind, batch) = (.temp, self.temp)
        }
        guard self.enabled(kind) else { return }
        self.host.armFlush()
        if !batch.continues(at: t0) { self.flush(kind) }
        var start = 0
        while start < values.count {
            let sampleTime = t0 + Double(start) / fs
            start += batch.append(values, from: start, t0: sampleTime)
            if batch.isFull { self.flush(kind) }
        }
        if self.host.flushEveryNotification { self.flush(kind) }
    }

    /// The `bvp` stream: artefact-reduced unless `publish.bvp = "raw"`.
    func bvp(raw: UnsafeBufferPointer<Float>, filtered: UnsafeBufferPointer<Float>, t0: Double, fs: Double) {
        self.samples(.bvp, self.host.publishesRawBVP ? raw : filtered, t0: t0, fs: fs)
    }

    func acceleration(x: UnsafeBufferPointer<Int8>, y: UnsafeBufferPointer<Int8>, z: UnsafeBufferPointer<Int8>,
                      t0: Double, fs: Double) {
        guard self.enabled(.acc) else { return }
        self.host.armFlush()
        if !self.acc.continues(at: t0) { self.flush(.acc) }
        for index in 0..<min(x.count, y.count, z.count) {
            if self.acc.isFull { self.flush(.acc) }
            if self.acc.count == 0 { self.acc.t0 = t0 + Double(index) / fs }
            let slot = self.acc.count * 3
            self.acc.xyz[slot] = x[index]
            self.acc.xyz[slot + 1] = y[index]
            self.acc.xyz[slot + 2] = z[index]
            self.acc.count += 1
        }
        if self.host.flushEveryNotification { self.flush(.acc) }
    }

    func ibi(_ seconds: Float, at time: Double) {
        self.event(.ibi, self.ibi, seconds, at: time)
    }

    func heartRate(_ bpm: Float, at time: Double) {
        self.heartRate(bpm, confidence: 1, source: .beats, at: time)
    }

    /// A heart rate from another source than the pending batch's is published in a message of its own, so every
    /// `hr` message names one `source` (SPEC §10).
    func heartRate(_ bpm: Float, confidence: Float, source: HeartRateSource, at time: Double) {
        guard self.enabled(.hr) else { return }
        if self.hr.count > 0 && self.hr.source != source { self.flush(.hr) }
        self.hr.source = source
        self.event(.hr, self.hr, bpm, confidence: min(max(confidence, 0), 1), at: time)
    }

    func battery(_ level: Float, at time: Double) {
        self.event(.battery, self.battery, level, at: time)
    }

    func tag(at time: Double) {
        self.event(.tag, self.tag, 0, at: time)
    }

    func contact(_ detected: Bool, at time: Double) {
        self.event(.contact, self.contact, detected ? 1 : 0, at: time)
    }

    func event(_ kind: StreamKind, _ batch: EventBatch, _ value: Float, confidence: Float = 1, at time: Double) {
        guard self.enabled(kind) else { return }
        self.host.armFlush()
        if batch.isFull { self.flush(kind) }
        batch.append(value, confidence: confidence, at: time)
        if self.host.flushEveryNotification { self.flush(kind) }
    }
}
