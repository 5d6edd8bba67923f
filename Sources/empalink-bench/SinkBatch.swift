/// Preallocated storage for one stream's pending batch in ``PublishingSink`` (the shape of the agent's batches).
final class SinkBatch {
    let fs: Double
    let decimals: Int
    let capacity: Int
    let values: UnsafeMutableBufferPointer<Float>
    let times: UnsafeMutableBufferPointer<Double>
    var count = 0
    var t0 = 0.0
    var seq: Int64 = 0

    init(fs: Double, capacity: Int, decimals: Int) {
        self.fs = fs
        self.decimals = decimals
        self.capacity = capacity
        self.values = .allocate(capacity: capacity)
        self.values.initialize(repeating: 0)
        self.times = .allocate(capacity: capacity)
        self.times.initialize(repeating: 0)
    }

    deinit {
        self.values.deallocate()
        self.times.deallocate()
    }

    /// Appends a value (and its time, for event streams); a full batch drops it — callers flush first.
    @inline(__always)
    func push(_ value: Float, at time: Double) {
        guard self.count < self.capacity else { return }
        self.values[self.count] = value
        self.times[self.count] = time
        self.count += 1
    }
}
