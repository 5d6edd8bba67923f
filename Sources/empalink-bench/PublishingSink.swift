import Agent
import EmpaLink

/// The agent's publishing step without the broker: batches per stream in preallocated storage, formatted into a
/// ``JSONBuffer`` with the same fields, order and decimals as `DevicePublisher.flush` (SPEC §10), and "published"
/// by counting the bytes.
///
/// `DevicePublisher` itself is internal to `Agent` and bound to a running `AgentRuntime`, so this is a faithful
/// copy of its formatting loop, not the same code; it measures the same primitives (``JSONBuffer`` appends).
final class PublishingSink: DecodedStreamSink {
    /// Flush after every notification (`batch_ms = 0`), or leave it to ``flushAll()``.
    let flushEveryNotification: Bool
    let json = JSONBuffer(capacity: 64 * 1024)
    let sidField = Array("\"sid\":\"0123456789abcdef\"".utf8)

    let bvp = SinkBatch(fs: 64, capacity: 1024, decimals: 3)
    let gsr = SinkBatch(fs: 4, capacity: 64, decimals: 4)
    let temp = SinkBatch(fs: 4, capacity: 64, decimals: 2)
    let acc = SinkBatch(fs: 32, capacity: 512 * 3, decimals: 0)
    let ibi = SinkBatch(fs: 0, capacity: 128, decimals: 4)
    let hr = SinkBatch(fs: 0, capacity: 128, decimals: 1)
    let events = SinkBatch(fs: 0, capacity: 64, decimals: 2)

    private(set) var messages = 0
    private(set) var bytes = 0

    init(flushEveryNotification: Bool) {
        self.flushEveryNotification = flushEveryNotification
    }

    func samples(_ stream: SampledStream, _ values: UnsafeBufferPointer<Float>, t0: Double, fs: Double) {
        let batch = stream == .bvp ? self.bvp : stream == .gsr ? self.gsr : self.temp
        if batch.count + values.count > batch.capacity { self.flushSampled(batch) }
        if batch.count == 0 { batch.t0 = t0 }
        for value in values { batch.push(value, at: 0) }
        if self.flushEveryNotification { self.flushSampled(batch) }
    }

    func acceleration(x: UnsafeBufferPointer<Int8>, y: UnsafeBufferPointer<Int8>, z: UnsafeBufferPointer<Int8>,
                      t0: Double, fs: Double) {
        if self.acc.count + 3 * x.count > self.acc.capacity { self.flushAcceleration() }
        if self.acc.count == 0 { self.acc.t0 = t0 }
        for index in 0..<min(x.count, y.count, z.count) {
            self.acc.push(Float(x[index]), at: 0)
            self.acc.push(Float(y[index]), at: 0)
            self.acc.push(Float(z[index]), at: 0)
        }
        if self.flushEveryNotification { self.flushAcceleration() }
    }

    func ibi(_ seconds: Float, at time: Double) { self.event(self.ibi, seconds, at: time) }
    func heartRate(_ bpm: Float, at time: Double) { self.event(self.hr, bpm, at: time) }
    func battery(_ level: Float, at time: Double) { self.event(self.events, level, at: time) }
    func tag(at time: Double) { self.event(self.events, 0, at: time) }

    func event(_ batch: SinkBatch, _ value: Float, at time: Double) {
        if batch.count == batch.capacity { self.flushEvents(batch) }
        batch.push(value, at: time)
        if self.flushEveryNotification { self.flushEvents(batch) }
    }

    /// What the agent's `batch_ms` timer does.
    func flushAll() {
        self.flushSampled(self.bvp)
        self.flushSampled(self.gsr)
        self.flushSampled(self.temp)
        self.flushAcceleration()
        self.flushEvents(self.ibi)
        self.flushEvents(self.hr)
        self.flushEvents(self.events)
    }

    func begin(_ batch: SinkBatch) {
        self.json.reset()
        self.json.append(UInt8(ascii: "{"))
        self.json.append(self.sidField)
        self.json.append(",\"seq\":")
        self.json.append(integer: batch.seq)
    }

    func finish(_ batch: SinkBatch) {
        self.json.append("]}")
        batch.seq += 1
        batch.count = 0
        self.messages += 1
        self.bytes += self.json.count
    }

    /// `{"sid":…,"seq":N,"t":t0,"fs":64,"v":[…]}`
    func flushSampled(_ batch: SinkBatch) {
        guard batch.count > 0 else { return }
        self.begin(batch)
        self.json.append(",\"t\":")
        self.json.append(batch.t0, decimals: 6)
        self.json.append(",\"fs\":")
        self.json.append(integer: Int64(batch.fs))
        self.json.append(",\"v\":[")
        for index in 0..<batch.count {
            if index > 0 { self.json.append(UInt8(ascii: ",")) }
            self.json.append(Double(batch.values[index]), decimals: batch.decimals)
        }
        self.finish(batch)
    }

    /// `{"sid":…,"seq":N,"t":t0,"fs":32,"v":[[x,y,z],…]}`
    func flushAcceleration() {
        let batch = self.acc
        guard batch.count > 0 else { return }
        self.begin(batch)
        self.json.append(",\"t\":")
        self.json.append(batch.t0, decimals: 6)
        self.json.append(",\"fs\":32,\"v\":[")
        for sample in 0..<batch.count / 3 {
            self.json.append(sample > 0 ? ",[" : "[")
            self.json.append(integer: Int64(batch.values[sample * 3]))
            self.json.append(UInt8(ascii: ","))
            self.json.append(integer: Int64(batch.values[sample * 3 + 1]))
            self.json.append(UInt8(ascii: ","))
            self.json.append(integer: Int64(batch.values[sample * 3 + 2]))
            self.json.append(UInt8(ascii: "]"))
        }
        self.finish(batch)
    }

    /// `{"sid":…,"seq":N,"v":[[t,value],…]}`
    func flushEvents(_ batch: SinkBatch) {
        guard batch.count > 0 else { return }
        self.begin(batch)
        self.json.append(",\"v\":[")
        for index in 0..<batch.count {
            if index > 0 { self.json.append(UInt8(ascii: ",")) }
            self.json.append(UInt8(ascii: "["))
            self.json.append(batch.times[index], decimals: 6)
            self.json.append(UInt8(ascii: ","))
            self.json.append(Double(batch.values[index]), decimals: batch.decimals)
            self.json.append(UInt8(ascii: "]"))
        }
        self.finish(batch)
    }
}
