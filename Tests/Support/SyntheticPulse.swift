/// A deterministic synthetic PPG with known beat times, for the IBI engine's tests
/// (PhysioTests) and the live path's (EmpaLinkTests).
///
/// Each beat is a pulse of a systolic wave and a smaller dicrotic wave rising from its foot; the foot (the
/// beat's truth time) is where the pulse starts, after the previous pulse has decayed.
public struct SyntheticPulse: Sendable {
    public var rate: Double
    public var start: Double
    public var amplitude: Double
    /// Relative size of the pulse with a given index (1 = normal); lets a test shrink or grow single pulses.
    public var scale: @Sendable (Int) -> Double = { _ in 1 }

    /// A pulse train sampled at `rate` Hz whose first sample is at `start` (seconds since 1970).
    public init(rate: Double = 64, start: Double = 1_700_000_000, amplitude: Double = 100) {
        self.rate = rate
        self.start = start
        self.amplitude = amplitude
    }

    /// Beat (foot) times for `intervals`, starting 0.3 s after `start`.
    public func beats(intervals: [Double]) -> [Double] {
        var times: [Double] = []
        var t = self.start + 0.3
        for interval in intervals {
            times.append(t)
            t += interval
        }
        times.append(t)
        return times
    }

    /// The BVP value at `time` for pulses starting at `beats`.
    public func value(at time: Double, beats: [Double]) -> Double {
        var total = 0.0
        for (index, beat) in beats.enumerated() {
            let tau = time - beat
            if tau < 0 || tau > 2.5 { continue }
            let next = index + 1 < beats.count ? beats[index + 1] - beat : 0.8
            let scale = min(max(next / 0.8, 0.45), 1.3)
            let systolic = Self.bump(tau, centre: 0.14 * scale, width: 0.05 * scale)
            let dicrotic = 0.45 * Self.bump(tau, centre: 0.36 * scale, width: 0.07 * scale)
            // A slow diastolic decay that ends near zero by the next foot.
            let decay = 0.25 * Self.smoothStep(tau / (0.12 * scale)) * Self.exponential(-tau / (0.25 * scale))
            total += self.amplitude * self.scale(index) * (systolic + dicrotic + decay)
        }
        return total
    }

    /// Samples from `start` to `end` (seconds since `start`).
    public func samples(beats: [Double], until end: Double) -> [(value: Double, time: Double)] {
        let count = Int(end * self.rate)
        return (0..<count).map { i in
            let t = self.start + Double(i) / self.rate
            return (self.value(at: t, beats: beats), t)
        }
    }

    public static func bump(_ x: Double, centre: Double, width: Double) -> Double {
        let u = (x - centre) / width
        return Self.exponential(-u * u)
    }

    public static func smoothStep(_ x: Double) -> Double {
        let c = min(max(x, 0), 1)
        return c * c * (3 - 2 * c)
    }

    /// e^x by range reduction and a Taylor series (test support stays Foundation-free like the modules).
    public static func exponential(_ x: Double) -> Double {
        if x < -40 { return 0 }
        var n = 0
        var r = x
        while abs(r) > 0.5 {
            r /= 2
            n += 1
        }
        var sum = 1.0
        var term = 1.0
        for k in 1..<16 {
            term *= r / Double(k)
            sum += term
        }
        for _ in 0..<n { sum *= sum }
        return sum
    }
}
