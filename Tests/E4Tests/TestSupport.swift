import E4

/// The decoders' error, or nil when the call returned.
func decodeError<T>(_ body: () throws(E4DecodeError) -> T) -> E4DecodeError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}

extension Array where Element == UInt8 {
    /// `[UInt8]` of an encoded packet.
    init(_ packet: E4PacketBytes) {
        self = packet.withUnsafeBytes { Array($0) }
    }
}

extension InlineArray {
    /// The elements as an array, for `#expect` comparisons.
    var array: [Element] {
        var result: [Element] = []
        for index in self.indices { result.append(self[index]) }
        return result
    }
}

/// Packet storage from an array literal (tests only).
func inline11(_ values: [Int]) -> InlineArray<11, Int> {
    var result = InlineArray<11, Int>(repeating: 0)
    for index in 0..<min(11, values.count) { result[index] = values[index] }
    return result
}
