/// Exponential backoff with full jitter: the delay before retry `failures` is a random duration in
/// [initial, min(maximum, initial · 2^(failures−1))], so a fleet of wristbands that failed together does not
/// retry in lock-step.
enum Backoff {
    static func delay(failures: Int, initial: Duration, maximum: Duration,
                      using random: inout some RandomNumberGenerator) -> Duration {
        let initialSeconds = Self.seconds(initial)
        let maximumSeconds = max(Self.seconds(maximum), initialSeconds)
        let exponent = Double(min(max(failures - 1, 0), 30))
        let ceiling = min(maximumSeconds, initialSeconds * pow2(exponent))
        let seconds = ceiling > initialSeconds ? Double.random(in: initialSeconds...ceiling, using: &random)
            : initialSeconds
        return .milliseconds(Int64(seconds * 1000))
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func pow2(_ exponent: Double) -> Double {
        var value = 1.0
        var remaining = Int(exponent)
        while remaining > 0 {
            value *= 2
            remaining -= 1
        }
        return value
    }
}
