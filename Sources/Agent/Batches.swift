import Physio

/// Samples of one sampled stream (BVP, GSR, temperature) waiting to be published: contiguous samples from `t0`
/// at `fs`. Storage is allocated once.
final class SampleBatch {
    let fs: Double
    let values: UnsafeMutableBufferPointer<Float>
    var count = 0
    var t0 = 0.0
    var seq: Int64 = 0

    init(fs: Double, capacity: Int) {
        self.fs = fs
        self.values = .allocate(capacity: capacity)
    }

    deinit { self.values.deallocate() }

    /// Whether samples starting at `t0` continue this batch (within half a sample period).
    func continues(at t0: Double) -> Bool {
        self.count == 0 || abs(self.t0 + Double(self.count) / self.fs - t0) < 0.5 / self.fs
    }

    var isFull: Bool { self.count == self.values.count }

    /// Appends what fits; returns how many were taken.
    func append(_ samples: UnsafeBufferPointer<Float>, from start: Int, t0: Double) -> Int {
        if self.count == 0 { self.t0 = t0 }
        let taken = min(samples.count - start, self.values.count - self.count)
        for index in 0..<taken { self.values[self.count + index] = samples[start + index] }
        self.count += taken
        return taken
    }
}

/// Accelerometer samples waiting to be published.
final class AccelerationBatch {
    let fs: Double
    let xyz: UnsafeMutableBufferPointer<Int8>
    var count = 0
    var t0 = 0.0
    var seq: Int64 = 0

    init(fs: Double, capacity: Int) {
        self.fs = fs
        self.xyz = .allocate(capacity: capacity * 3)
    }

    deinit { self.xyz.deallocate() }

    var capacity: Int { self.xyz.count / 3 }
    var isFull: Bool { self.count == self.capacity }

    func continues(at t0: Double) -> Bool {
        self.count == 0 || abs(self.t0 + Double(self.count) / self.fs - t0) < 0.5 / self.fs
    }
}

/// Timestamped events (IBI, heart rate, battery, tags) waiting to be published. Heart rate also keeps each value's
/// confidence, and one source for the whole batch: a value from another source starts a new message.
final class EventBatch {
    let times: UnsafeMutableBufferPointer<Double>
    let values: UnsafeMutableBufferPointer<Float>
    let confidences: UnsafeMutableBufferPointer<Float>
    var source = HeartRateSource.beats
    var count = 0
    var seq: Int64 = 0

    init(capacity: Int) {
        self.times = .allocate(capacity: capacity)
        self.values = .allocate(capacity: capacity)
        self.confidences = .allocate(capacity: capacity)
    }

    deinit {
        self.times.deallocate()
        self.values.deallocate()
        self.confidences.deallocate()
    }

    var isFull: Bool { self.count == self.times.count }

    func append(_ value: Float, confidence: Float = 1, at time: Double) {
        guard !self.isFull else { return }
        self.times[self.count] = time
        self.values[self.count] = value
        self.confidences[self.count] = confidence
        self.count += 1
    }
}
