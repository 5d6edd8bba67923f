/// Writes the fleet's payloads: fixed key order, no spaces, numbers in a form the reader gives back exactly, so
/// that a payload's bytes depend only on its value (golden tests, idempotent retained messages).
struct FleetJSONWriter {
    private(set) var bytes: [UInt8] = []

    init() { self.bytes.reserveCapacity(128) }

    mutating func raw(_ text: String) { self.bytes.append(contentsOf: text.utf8) }

    /// A string known to be an identifier (``FleetProtocol/isIdentifier(_:)``): nothing to escape.
    mutating func identifier(_ text: String) {
        self.bytes.append(UInt8(ascii: "\""))
        self.bytes.append(contentsOf: text.utf8)
        self.bytes.append(UInt8(ascii: "\""))
    }

    mutating func key(_ name: StaticString, first: Bool = false) {
        if !first { self.bytes.append(UInt8(ascii: ",")) }
        self.bytes.append(UInt8(ascii: "\""))
        self.bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        self.bytes.append(contentsOf: "\":".utf8)
    }

    /// Tenths of a unit as a decimal with one fractional digit (`-615` → `-61.5`).
    mutating func tenths(_ value: Int) {
        let magnitude = value.magnitude
        self.raw("\(value < 0 ? "-" : "")\(magnitude / 10).\(magnitude % 10)")
    }

    /// Tenths from a decoded number: the inverse of ``tenths(_:)`` for every value it writes.
    static func tenths(of value: Double) -> Int { Int((value * 10).rounded()) }
}
