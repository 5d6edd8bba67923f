/// A fixed-capacity byte buffer that JSON is written into without allocating.
///
/// Allocated once; ``reset()`` makes it empty again. Writes past the capacity are dropped and ``overflowed``
/// is set, so a caller can discard the message instead of sending truncated JSON.
public final class JSONBuffer {
    let storage: UnsafeMutableRawBufferPointer
    public private(set) var count = 0
    public private(set) var overflowed = false

    public init(capacity: Int) {
        self.storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(capacity, 64), alignment: 8)
    }

    deinit {
        self.storage.deallocate()
    }

    public var capacity: Int { self.storage.count }

    /// The bytes written so far, valid until the next write or reset.
    public var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: self.storage[0..<self.count])
    }

    public func reset() {
        self.count = 0
        self.overflowed = false
    }

    @inline(__always)
    public func append(_ byte: UInt8) {
        guard self.count < self.storage.count else {
            self.overflowed = true
            return
        }
        self.storage[self.count] = byte
        self.count += 1
    }

    /// Appends ASCII text known at compile time (keys, punctuation).
    public func append(_ text: StaticString) {
        text.withUTF8Buffer { utf8 in
            for byte in utf8 { self.append(byte) }
        }
    }

    public func append(bytes: UnsafeRawBufferPointer) {
        for byte in bytes { self.append(byte) }
    }

    public func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { self.append(bytes: $0) }
    }

    /// Appends a decimal integer.
    public func append(integer value: Int64) {
        if value < 0 { self.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var length = 0
        withUnsafeMutableBytes(of: &digits) { raw in
            repeat {
                raw[length] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                length += 1
            } while magnitude > 0
            while length > 0 {
                length -= 1
                self.append(raw[length])
            }
        }
    }

    /// Appends `value` with exactly `decimals` digits after the point, trailing zeros removed
    /// (`36.5`, `-0.25`, `1795961731.305037`); NaN and infinities as `null`, which JSON can carry.
    public func append(_ value: Double, decimals: Int) {
        guard value.isFinite else {
            self.append("null")
            return
        }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        guard scaled < 9.0e18 else {
            // Beyond Int64 at this precision (no sensor value comes near): Swift's shortest round-trip form, which
            // is valid JSON ("1e+300"). It allocates; clamping, as this once did, wrote a wrong number instead.
            for byte in value.description.utf8 { self.append(byte) }
            return
        }
        var units = UInt64(scaled)
        if value < 0 && units != 0 { self.append(UInt8(ascii: "-")) }
        var divisor: UInt64 = 1
        for _ in 0..<decimals { divisor *= 10 }
        self.append(integer: Int64(units / divisor))
        units %= divisor
        guard units != 0 else { return }
        self.append(UInt8(ascii: "."))
        var digitsLeft = decimals
        while units != 0 && digitsLeft > 0 {
            divisor /= 10
            self.append(UInt8(ascii: "0") + UInt8(units / divisor))
            units %= divisor
            digitsLeft -= 1
        }
    }

    /// Appends a JSON string literal (control plane: ids, labels, names).
    public func append(string: String) {
        self.append(UInt8(ascii: "\""))
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": self.append("\\\"")
            case "\\": self.append("\\\\")
            case "\n": self.append("\\n")
            case "\r": self.append("\\r")
            case "\t": self.append("\\t")
            default:
                if scalar.value < 0x20 {
                    self.append("\\u00")
                    let hex: StaticString = "0123456789abcdef"
                    hex.withUTF8Buffer { digits in
                        self.append(digits[Int(scalar.value >> 4)])
                        self.append(digits[Int(scalar.value & 0xF)])
                    }
                } else {
                    for byte in String(scalar).utf8 { self.append(byte) }
                }
            }
        }
        self.append(UInt8(ascii: "\""))
    }
}
