/// A second-order IIR section (transposed direct form II), designed by the bilinear transform.
///
/// Used as the engine's low-pass before the slope detector: it removes sensor noise above the pulse's
/// harmonics without the cost of an FIR, in fixed memory.
struct Biquad: Sendable {
    private var b0: Double, b1: Double, b2: Double, a1: Double, a2: Double
    private var z1 = 0.0, z2 = 0.0

    /// A Butterworth low-pass (Q = 1/√2).
    ///
    /// - Parameters:
    ///   - cutoff: corner frequency in Hz; clamped below Nyquist.
    ///   - sampleRate: in Hz.
    init(lowPass cutoff: Double, sampleRate: Double) {
        let fc = min(cutoff, 0.45 * sampleRate)
        let k = Self.tan(Double.pi * fc / sampleRate)
        let q = 0.7071067811865476
        let norm = 1 / (1 + k / q + k * k)
        self.b0 = k * k * norm
        self.b1 = 2 * self.b0
        self.b2 = self.b0
        self.a1 = 2 * (k * k - 1) * norm
        self.a2 = (1 - k / q + k * k) * norm
    }

    /// Filters one sample.
    mutating func process(_ x: Double) -> Double {
        let y = self.b0 * x + self.z1
        self.z1 = self.b1 * x - self.a1 * y + self.z2
        self.z2 = self.b2 * x - self.a2 * y
        return y
    }

    /// Starts the filter in steady state at `x`, so a DC offset does not ring through the detector.
    mutating func prime(_ x: Double) {
        // Steady state for a unit-gain low-pass: y = x.
        self.z1 = x - self.b0 * x
        self.z2 = self.b2 * x - self.a2 * x
    }

    /// `tan` without Foundation: sin/cos by their Taylor series is plenty for design-time use (|x| < π/2).
    private static func tan(_ x: Double) -> Double {
        var sine = 0.0, cosine = 0.0, term = 1.0
        // cos: Σ (-1)^n x^(2n) / (2n)!, sin: Σ (-1)^n x^(2n+1) / (2n+1)!
        for n in 0..<20 {
            cosine += term
            term *= -x * x / Double((2 * n + 1) * (2 * n + 2))
        }
        term = x
        for n in 0..<20 {
            sine += term
            term *= -x * x / Double((2 * n + 2) * (2 * n + 3))
        }
        return sine / cosine
    }
}
