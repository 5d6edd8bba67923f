/// Small text helpers of the validator: value checks and message wording.
extension ConfigValidator {
    /// `; did you mean "x"?` when a known name is close to `name` (edit distance ≤ 2), otherwise a list of the
    /// known names so the operator sees what is allowed.
    static func suggestion(for name: String, among known: [String]) -> String {
        // A length difference beyond 2 already rules a name out; skipping those keeps a 1 MB key cheap.
        let length = name.unicodeScalars.count
        let scored = known.filter { abs($0.unicodeScalars.count - length) <= 2 }
            .map { (name: $0, distance: self.editDistance(name, $0)) }
        if let best = scored.min(by: { $0.distance < $1.distance }), best.distance <= 2 {
            return "; did you mean \"\(best.name)\"?"
        }
        guard !known.isEmpty else { return "" }
        return "; expected one of " + known.map { "\"\($0)\"" }.joined(separator: ", ")
    }

    /// Levenshtein distance over Unicode scalars, capped in cost by the short names it is used on.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.unicodeScalars)
        let b = Array(b.unicodeScalars)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }

    /// "a string \"x\"", "an integer (5)", … for "found …" in messages.
    static func article(_ value: TOMLValue) -> String {
        switch value.kind {
        case .string(let s): return "a string (\(self.quoted(s)))"
        case .integer(let i): return "an integer (\(i))"
        case .float(let d): return "a float (\(d))"
        case .boolean(let b): return "a boolean (\(b))"
        case .array: return "an array"
        case .table: return "a table"
        }
    }

    /// A string as a quoted, escaped literal, shortened past 60 characters.
    static func quoted(_ text: String) -> String {
        let shown = text.unicodeScalars.count > 60 ? String(String.UnicodeScalarView(text.unicodeScalars.prefix(57))) + "…"
            : text
        var out = ""
        JSONValue.writeString(shown, to: &out)
        return out
    }

    /// `"a", "b" or "c"`.
    static func alternatives(_ values: [String]) -> String {
        let quoted = values.map { "\"\($0)\"" }
        guard quoted.count > 1 else { return quoted.first ?? "" }
        return quoted.dropLast().joined(separator: ", ") + " or " + (quoted.last ?? "")
    }

    static func isIdentifierByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }

    /// Most adapters `bluetooth.adapter` may list.
    static let maximumAdapters = 8

    /// `hci` and 1-3 digits: what bluetoothd names adapters, and safe in an object path.
    static func isAdapterName(_ text: String) -> Bool {
        let digits = text.utf8.dropFirst(3)
        return text.hasPrefix("hci") && (1...3).contains(digits.count)
            && digits.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    static func isIdentifier(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count) && text.utf8.allSatisfy(self.isIdentifierByte)
    }

    /// The host name made into a valid `agent.id`: other characters become `-`, at most 64 bytes.
    static func identifier(fromHostname hostname: String) -> String {
        let bytes = hostname.utf8.prefix(64).map { self.isIdentifierByte($0) ? $0 : UInt8(ascii: "-") }
        let text = String(decoding: bytes, as: UTF8.self)
        return text.isEmpty ? "empalink" : text
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// A serial in its canonical lower-case form, or `nil` when it is not 6 hex digits.
    static func normalizedSerial(_ text: String) -> String? {
        guard text.utf8.count == 6, text.utf8.allSatisfy({ self.hexValue($0) != nil }) else { return nil }
        return text.lowercased()
    }

    /// An address in its canonical upper-case `XX:XX:XX:XX:XX:XX` form, or `nil` when malformed.
    static func normalizedAddress(_ text: String) -> String? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6,
              parts.allSatisfy({ $0.utf8.count == 2 && $0.utf8.allSatisfy { self.hexValue($0) != nil } }) else {
            return nil
        }
        return text.uppercased()
    }

    /// The serial of a canonical address: lower-case hex of its last three bytes.
    static func serial(ofAddress address: String) -> String {
        String(address.split(separator: ":").suffix(3).joined()).lowercased()
    }
}
