import EmpaLink

/// A ``DecodedStreamSink`` that does nothing but count, so a measurement sees only the decode path. The counts
/// live in a class allocated before measuring; the sink passed to `receive` is ``Proxy``, a struct over it.
final class CountingSink {
    struct Counts {
        var samples = 0
        var accelerations = 0
        var intervals = 0
        var heartRates = 0
        var events = 0

        static func - (lhs: Counts, rhs: Counts) -> Counts {
            Counts(samples: lhs.samples - rhs.samples, accelerations: lhs.accelerations - rhs.accelerations,
                   intervals: lhs.intervals - rhs.intervals, heartRates: lhs.heartRates - rhs.heartRates,
                   events: lhs.events - rhs.events)
        }
    }

    var counts = Counts()

    var snapshot: Counts { self.counts }

    struct Proxy: DecodedStreamSink {
        unowned let owner: CountingSink

        func samples(_ stream: SampledStream, _ values: UnsafeBufferPointer<Float>, t0: Double, fs: Double) {
            self.owner.counts.samples += 1
        }

        func acceleration(x: UnsafeBufferPointer<Int8>, y: UnsafeBufferPointer<Int8>, z: UnsafeBufferPointer<Int8>,
                          t0: Double, fs: Double) {
            self.owner.counts.accelerations += 1
        }

        func ibi(_ seconds: Float, at time: Double) {
            self.owner.counts.intervals += 1
        }

        func heartRate(_ bpm: Float, at time: Double) {
            self.owner.counts.heartRates += 1
        }

        func battery(_ level: Float, at time: Double) {
            self.owner.counts.events += 1
        }

        func tag(at time: Double) {
            self.owner.counts.events += 1
        }

        func contact(_ detected: Bool, at time: Double) {
            self.owner.counts.events += 1
        }
    }
}
