/// Accelerometer-referenced adaptive cancellation of motion artefacts in BVP (normalised LMS, causal, fixed memory).
///
/// Arm movement shows in the PPG as a component linearly related to the acceleration the wrist feels, with a lag and
/// a gain that change as the sensor sits differently on the skin. The filter keeps the last ``taps`` ACC samples of
/// each axis, high-passed (the gravity and posture offsets are no artefact), and learns the FIR from them to the
/// high-passed BVP by normalised LMS; the artefact estimate is subtracted from the BVP as it came in, so the output
/// is the same signal, baseline and all, less what the accelerometer explains.
///
/// At rest the references are sensor noise (≈ 0.01 g): the normalisation's floor (``referenceFloor``, 0.03 g per
/// tap) keeps the filter from learning from them, the subtracted estimate is scaled by how much the wrist moves
/// (reference power over power plus floor: ≈ 0.1 at rest, ≈ 1 walking), and the weights leak to zero at rest with a
/// 2 s time constant, so a still wrist's BVP comes out as it went in (beat positions at rest; `Docs/ibi.md`).
/// Memory is fixed at `init`; ``append(bvp:)`` and ``appendACC(x:y:z:)`` never allocate.
public struct MotionArtefactFilter: Sendable {
    /// ACC samples per axis in the FIR (32 Hz: 0.25 s of lag covered).
    static let taps = 8
    /// Step size: at the arm-swing frequencies the weights converge in about 2 / µ BVP samples (≈ 3 s at 64 Hz), slow
    /// enough that a pulse which happens to share the cadence for a few beats is not learned away.
    static let stepSize = 0.01
    /// Per-tap reference power below which the filter hardly learns, in g (the E4 at rest: 0.01–0.02 g).
    static let referenceFloor = 0.03

    private var references: FixedRing<SIMD4<Double>>
    private var weights: [SIMD4<Double>]
    private var referenceHighPass: SIMD4<Double> = .zero
    private var bvpBaseline: Biquad
    private var bvpPrimed = false
    private let countsPerG: Double
    private let accAlpha: Double
    /// Per-sample leak of the weights at rest: a 2 s time constant.
    private let restLeak: Double
    private var primedACC = false

    /// - Parameters:
    ///   - bvpRate: BVP sample rate in Hz.
    ///   - accRate: ACC sample rate in Hz.
    ///   - accCountsPerG: ACC counts per g.
    public init(bvpRate: Double = 64, accRate: Double = 32, accCountsPerG: Double = 64) {
        self.references = FixedRing(minimumCapacity: Self.taps, filler: .zero)
        self.weights = [SIMD4<Double>](repeating: .zero, count: Self.taps)
        self.bvpBaseline = Biquad(lowPass: 0.5, sampleRate: bvpRate > 0 ? bvpRate : 64)
        self.countsPerG = accCountsPerG > 0 ? accCountsPerG : 64
        self.restLeak = 1 / (2 * (bvpRate > 0 ? bvpRate : 64))
        // One-pole baseline of the references at 0.3 Hz: what is left above it is movement.
        let rate = accRate > 0 ? accRate : 32
        self.accAlpha = 1 - Self.exp(-2 * Double.pi * 0.3 / rate)
        for _ in 0..<Self.taps { self.references.append(.zero) }
    }

    /// Forgets the learned artefact path and the references, as after a reconnect.
    public mutating func reset() {
        self.references.removeAll()
        for _ in 0..<Self.taps { self.references.append(.zero) }
        for index in 0..<Self.taps { self.weights[index] = .zero }
        self.referenceHighPass = .zero
        self.primedACC = false
        self.bvpPrimed = false
    }

    /// Adds one ACC sample (device counts); non-finite values are ignored.
    public mutating func appendACC(x: Double, y: Double, z: Double) {
        guard x.isFinite, y.isFinite, z.isFinite else { return }
        let limit = 16.0  // g; an E4 saturates at 2 g, so anything beyond is not acceleration.
        let g = SIMD4<Double>(x, y, z, 0) / self.countsPerG
        let value = g.clamped(lowerBound: SIMD4(repeating: -limit), upperBound: SIMD4(repeating: limit))
        if !self.primedACC {
            self.referenceHighPass = value
            self.primedACC = true
        }
        self.referenceHighPass += self.accAlpha * (value - self.referenceHighPass)
        self.references.append(value - self.referenceHighPass)
    }

    /// Filters one BVP sample: the sample less the artefact the recent acceleration explains. A non-finite sample
    /// comes back unchanged and teaches nothing.
    public mutating func append(bvp value: Double) -> Double {
        guard value.isFinite, abs(value) < 1e9 else { return value }
        if !self.bvpPrimed {
            self.bvpBaseline.prime(value)
            self.bvpPrimed = true
        }
        let desired = value - self.bvpBaseline.process(value)
        var estimate = SIMD4<Double>.zero
        var power = SIMD4<Double>.zero
        for tap in 0..<Self.taps {
            let u = self.references[back: tap]
            estimate += self.weights[tap] * u
            power += u * u
        }
        let artefact = estimate.sum()
        let error = desired - artefact
        let floor = Double(Self.taps * 3) * Self.referenceFloor * Self.referenceFloor
        let total = power.sum()
        let gain = Self.stepSize * error / (floor + total)
        // How much the wrist moves, 0…1: ≈ 0.1 at rest (references of sensor noise), ≈ 1 walking. The subtracted
        // artefact is scaled by it and the weights leak toward zero at rest (2 s), so a still wrist's BVP comes out
        // as it went in and its beats stay where they were.
        let moving = total / (total + floor)
        let leak = 1 - (1 - moving) * self.restLeak
        if gain.isFinite, leak.isFinite {
            for tap in 0..<Self.taps {
                self.weights[tap] = leak * self.weights[tap] + gain * self.references[back: tap]
            }
        } else {
            for tap in 0..<Self.taps { self.weights[tap] = .zero }
            return value
        }
        let subtracted = moving * artefact
        return subtracted.isFinite ? value - subtracted : value
    }

    /// `exp` without Foundation, for design-time use (|x| small).
    static func exp(_ x: Double) -> Double {
        var sum = 1.0, term = 1.0
        for n in 1..<30 {
            term *= x / Double(n)
            sum += term
        }
        return sum
    }
}
