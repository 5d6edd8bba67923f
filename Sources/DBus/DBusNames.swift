/// Validation of D-Bus names and paths, done before anything reaches libdbus, which aborts the process when
/// handed an invalid one ("arguments to … were incorrect" is fatal by default).
public enum DBusNames {
    static func isNameChar(_ byte: UInt8, allowHyphen: Bool = false) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"):
            return true
        case UInt8(ascii: "-"):
            return allowHyphen
        default:
            return false
        }
    }

    static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// `/` or `/a/b_c/D1`: elements of `[A-Za-z0-9_]`, no empty elements, no trailing slash.
    public static func isValidObjectPath(_ path: String) -> Bool {
        let bytes = Array(path.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        guard bytes.last != UInt8(ascii: "/") else { return false }
        var previousSlash = false
        for byte in bytes.dropFirst() {
            if byte == UInt8(ascii: "/") {
                if previousSlash { return false }
                previousSlash = true
            } else {
                guard self.isNameChar(byte) else { return false }
                previousSlash = false
            }
        }
        return true
    }

    /// Interface and error names: two or more dot-separated elements, none starting with a digit, ≤ 255 bytes.
    public static func isValidInterfaceName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= 255 else { return false }
        let elements = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard elements.count >= 2 else { return false }
        return elements.allSatisfy { element in
            guard let first = element.first, !self.isDigit(first) else { return false }
            return element.allSatisfy { self.isNameChar($0) }
        }
    }

    /// Method and signal names: `[A-Za-z_][A-Za-z0-9_]*`, ≤ 255 bytes.
    public static func isValidMemberName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= 255, !self.isDigit(first) else { return false }
        return bytes.allSatisfy { self.isNameChar($0) }
    }

    /// Unique (`:1.42`) or well-known (`org.bluez`) bus names, ≤ 255 bytes.
    public static func isValidBusName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= 255 else { return false }
        let unique = bytes.first == UInt8(ascii: ":")
        let body = unique ? Array(bytes.dropFirst()) : bytes
        let elements = body.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard elements.count >= 2 else { return false }
        return elements.allSatisfy { element in
            guard let first = element.first else { return false }
            if !unique && self.isDigit(first) { return false }
            return element.allSatisfy { self.isNameChar($0, allowHyphen: true) }
        }
    }

    /// Strings on the wire are UTF-8 without NUL (Swift strings are always valid UTF-8).
    public static func isValidString(_ string: String) -> Bool {
        !string.utf8.contains(0)
    }
}
