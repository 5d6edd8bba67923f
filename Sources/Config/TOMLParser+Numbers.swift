/// Integers (decimal, hexadecimal, octal, binary) and floats (fractions, exponents, inf, nan).
extension TOMLParser {
    /// Whether `byte` can be part of a number as written: digits, letters (hex digits, `e`, `x`, `inf`, …), `_`,
    /// `.`, `+`, `-`. The run is scanned first and then checked as a whole against TOML's grammar.
    @inline(__always)
    static func isNumberByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "+"),
            UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }

    /// Parses the number at the cursor.
    ///
    /// - Throws: ``TOMLError`` at the number's start for malformed numbers and integers beyond 64 bits.
    mutating func parseNumber() throws(TOMLError) -> TOMLValue.Kind {
        let start = self.position
        let first = self.index
        while let byte = self.peek(), TOMLParser.isNumberByte(byte) {
            self.advance()
        }
        let token = self.bytes[first..<self.index]
        let text = String(decoding: token, as: UTF8.self)
        do throws(NumberError) {
            return try TOMLParser.number(token)
        } catch {
            throw TOMLError(error.message(for: text), at: start)
        }
    }

    /// Why a number is malformed; the message is completed with the text as written.
    enum NumberError: Error {
        case invalid(String)
        case overflow
        /// Letters where a value should be, such as an unquoted string.
        case notAValue

        func message(for written: String) -> String {
            // Long enough for any 64-bit literal with separators (a binary one is 66+ characters).
            let text = TOMLParser.shortened(written, limit: 100)
            switch self {
            case .invalid(let reason):
                return "invalid number '\(text)': \(reason)"
            case .notAValue:
                return "expected a value, found '\(text)'; strings need quotes, booleans are 'true' and 'false'"
            case .overflow:
                return "integer \(text) does not fit in 64 bits"
            }
        }
    }

    /// Checks a whole number token against the TOML grammar and converts it.
    static func number(_ token: ArraySlice<UInt8>) throws(NumberError) -> TOMLValue.Kind {
        var rest = token
        var negative = false
        var signed = false
        if let first = rest.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") {
            negative = first == UInt8(ascii: "-")
            signed = true
            rest = rest.dropFirst()
        }
        if rest.elementsEqual("inf".utf8) {
            return .float(negative ? -Double.infinity : Double.infinity)
        }
        if rest.elementsEqual("nan".utf8) {
            return .float(negative ? -Double.nan : Double.nan)
        }
        if let first = rest.first, (first >= UInt8(ascii: "A") && first <= UInt8(ascii: "Z"))
            || (first >= UInt8(ascii: "a") && first <= UInt8(ascii: "z"))
        {
            throw .notAValue
        }
        if rest.count >= 2 && rest.first == UInt8(ascii: "0") {
            let radix: UInt64?
            switch rest[rest.startIndex &+ 1] {
            case UInt8(ascii: "x"): radix = 16
            case UInt8(ascii: "o"): radix = 8
            case UInt8(ascii: "b"): radix = 2
            default: radix = nil
            }
            if let radix {
                if signed {
                    throw .invalid("hexadecimal, octal and binary integers cannot have a sign")
                }
                return .integer(try TOMLParser.prefixedInteger(rest.dropFirst(2), radix: radix))
            }
        }
        return try TOMLParser.decimal(rest, negative: negative)
    }

    /// The digits after `0x`, `0o` or `0b`, with `_` allowed only between digits.
    private static func prefixedInteger(_ digits: ArraySlice<UInt8>, radix: UInt64) throws(NumberError) -> Int64 {
        guard !digits.isEmpty else { throw .invalid("expected digits after the prefix") }
        var value: UInt64 = 0
        var previousWasDigit = false
        for byte in digits {
            if byte == UInt8(ascii: "_") {
                guard previousWasDigit else { throw .invalid("'_' must be between digits") }
                previousWasDigit = false
                continue
            }
            guard let digit = TOMLParser.hexValue(byte), UInt64(digit) < radix else {
                throw .invalid("'\(Character(Unicode.Scalar(byte)))' is not a base-\(radix) digit")
            }
            let (shifted, overflow) = value.multipliedReportingOverflow(by: radix)
            let (sum, carry) = shifted.addingReportingOverflow(UInt64(digit))
            if overflow || carry || sum > UInt64(Int64.max) {
                throw .overflow
            }
            value = sum
            previousWasDigit = true
        }
        guard previousWasDigit else { throw .invalid("'_' must be between digits") }
        return Int64(value)
    }

    /// A decimal integer or float (sign already removed).
    private static func decimal(_ text: ArraySlice<UInt8>, negative: Bool) throws(NumberError) -> TOMLValue.Kind {
        var cursor = text.startIndex
        let end = text.endIndex
        let integerDigits = try TOMLParser.digitRun(text, from: &cursor, part: "integer part")
        if integerDigits > 1 && text.first == UInt8(ascii: "0") {
            throw .invalid("leading zeros are not allowed")
        }
        var isFloat = false
        if cursor < end && text[cursor] == UInt8(ascii: ".") {
            isFloat = true
            cursor &+= 1
            _ = try TOMLParser.digitRun(text, from: &cursor, part: "fraction after '.'")
        }
        if cursor < end && (text[cursor] == UInt8(ascii: "e") || text[cursor] == UInt8(ascii: "E")) {
            isFloat = true
            cursor &+= 1
            if cursor < end && (text[cursor] == UInt8(ascii: "+") || text[cursor] == UInt8(ascii: "-")) {
                cursor &+= 1
            }
            _ = try TOMLParser.digitRun(text, from: &cursor, part: "exponent")
        }
        guard cursor == end else {
            throw .invalid("unexpected '\(Character(Unicode.Scalar(text[cursor])))'")
        }
        if isFloat {
            var plain = negative ? "-" : ""
            plain.unicodeScalars.append(contentsOf: text.lazy.filter { $0 != UInt8(ascii: "_") }
                .map { Unicode.Scalar($0) })
            guard let value = Double(plain) else { throw .invalid("not a float") }
            return .float(value)
        }
        // Accumulate negatively so that Int64.min (one more than Int64.max in magnitude) fits.
        var value: Int64 = 0
        for byte in text where byte != UInt8(ascii: "_") {
            let (shifted, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, carry) = shifted.subtractingReportingOverflow(Int64(byte &- UInt8(ascii: "0")))
            if overflow || carry {
                throw .overflow
            }
            value = sum
        }
        if negative {
            return .integer(value)
        }
        guard value != Int64.min else { throw .overflow }
        return .integer(-value)
    }

    /// One run of decimal digits with `_` only between digits; moves `cursor` past it.
    ///
    /// - Returns: the number of digits.
    private static func digitRun(_ text: ArraySlice<UInt8>, from cursor: inout Int, part: String)
        throws(NumberError) -> Int
    {
        var digits = 0
        var previousWasDigit = false
        while cursor < text.endIndex {
            let byte = text[cursor]
            if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                digits &+= 1
                previousWasDigit = true
            } else if byte == UInt8(ascii: "_") {
                guard previousWasDigit else { throw .invalid("'_' must be between digits") }
                previousWasDigit = false
            } else {
                break
            }
            cursor &+= 1
        }
        guard digits > 0 else {
            if cursor < text.endIndex {
                throw .invalid("expected digits in the \(part), found '\(Character(Unicode.Scalar(text[cursor])))'")
            }
            throw .invalid("expected digits in the \(part)")
        }
        guard previousWasDigit else { throw .invalid("'_' must be between digits") }
        return digits
    }
}
