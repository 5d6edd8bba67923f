/// Number formatting for the consumer tools' text outputs, without Foundation.
public enum DecimalText {
    /// `value` with exactly `decimals` digits after the point (`%.Nf`).
    public static func fixed(_ value: Double, _ decimals: Int) -> String {
        guard value.isFinite else { return "0" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let negative = value < 0
        let scaled = (abs(value) * scale).rounded()
        guard scaled < 9.0e18 else { return "\(value)" }
        let units = UInt64(scaled)
        let whole = units / UInt64(scale)
        var fraction = String(units % UInt64(scale))
        while fraction.count < decimals { fraction = "0" + fraction }
        return (negative && units > 0 ? "-" : "") + "\(whole)" + (decimals > 0 ? ".\(fraction)" : "")
    }

    /// `value` with at most `digits` significant digits (never more than `digits` decimals), trailing zeros
    /// removed: 0.8281250 → "0.828125", 32.61 → "32.61", -12.3456789 → "-12.34568", 64.0 → "64".
    public static func significant(_ value: Double, _ digits: Int = 7) -> String {
        var integerDigits = 1
        var magnitude = abs(value)
        while magnitude >= 10 && integerDigits < 19 {
            magnitude /= 10
            integerDigits += 1
        }
        return Self.trimmed(Self.fixed(value, max(0, min(digits, digits - integerDigits))))
    }

    /// `value` with at most `decimals` decimals, trailing zeros removed.
    public static func upTo(_ value: Double, _ decimals: Int) -> String {
        Self.trimmed(Self.fixed(value, decimals))
    }

    static func trimmed(_ text: String) -> String {
        guard text.contains(".") else { return text }
        var text = Substring(text)
        while text.last == "0" { text = text.dropLast() }
        if text.last == "." { text = text.dropLast() }
        return text == "-0" ? "0" : String(text)
    }
}
