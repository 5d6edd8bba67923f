/// UTF-8 validation of the whole document before parsing.
extension TOMLParser {
    /// Checks that `bytes` is well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
    ///
    /// Validating once up front lets the parser build strings from byte ranges without re-checking them.
    ///
    /// - Returns: `nil` when valid, otherwise an error at the first bad byte.
    /// - Complexity: O(n).
    static func validateUTF8(_ bytes: [UInt8]) -> TOMLError? {
        var index = 0
        let count = bytes.count
        while index < count {
            let lead = bytes[index]
            if lead < 0x80 {
                index &+= 1
                continue
            }
            // The allowed range of the second byte depends on the lead byte (Unicode Table 3-7).
            let length: Int
            var low: UInt8 = 0x80
            var high: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; high = 0x9F
            case 0xF0: length = 4; low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; high = 0x8F
            default:
                return TOMLParser.invalidUTF8(bytes, at: index)
            }
            guard count - index >= length else {
                return TOMLParser.invalidUTF8(bytes, at: index)
            }
            let second = bytes[index &+ 1]
            guard second >= low && second <= high else {
                return TOMLParser.invalidUTF8(bytes, at: index)
            }
            var offset = 2
            while offset < length {
                guard bytes[index &+ offset] & 0xC0 == 0x80 else {
                    return TOMLParser.invalidUTF8(bytes, at: index)
                }
                offset &+= 1
            }
            index &+= length
        }
        return nil
    }

    private static func invalidUTF8(_ bytes: [UInt8], at offset: Int) -> TOMLError {
        TOMLError(
            "invalid UTF-8 (byte 0x\(String(bytes[offset], radix: 16, uppercase: true)) at byte offset \(offset))",
            at: TOMLParser.position(of: offset, in: bytes)
        )
    }

    /// The line and column of byte `offset`, counted from the start (only used for errors).
    static func position(of offset: Int, in bytes: [UInt8]) -> SourcePosition {
        var line = 1
        var column = 1
        var index = 0
        if bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF && offset >= 3 {
            index = 3
        }
        while index < offset && index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\n") {
                line &+= 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column &+= 1
            }
            index &+= 1
        }
        return SourcePosition(line: line, column: column)
    }
}
