/// A D-Bus value of any type BlueZ uses: basic types, arrays, dictionaries, structs, variants and Unix fds.
///
/// Arrays and dictionaries carry their element signature so that empty ones marshal correctly. `ay` has its own
/// case (``bytes(_:)``) because GATT values travel as byte arrays and deserve a copy-once fast path.
public indirect enum DBusValue: Hashable, Sendable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// A Unix file descriptor (`h`). Sending duplicates it (the caller keeps and closes its own); a received one is
    /// a new descriptor that the receiver owns and must close.
    case unixFD(Int32)
    /// `ay`.
    case bytes([UInt8])
    /// `a` + element signature; for dictionaries use ``dictionary(key:value:_:)``.
    case array(element: String, [DBusValue])
    /// `a{KV}`, entries in order.
    case dictionary(key: String, value: String, [DictionaryEntry])
    /// `(…)`.
    case structure([DBusValue])
    /// `v`.
    case variant(DBusValue)

    public struct DictionaryEntry: Hashable, Sendable {
        public var key: DBusValue
        public var value: DBusValue

        public init(_ key: DBusValue, _ value: DBusValue) {
            self.key = key
            self.value = value
        }
    }

    /// The value's D-Bus type signature, e.g. `a{sv}`.
    public var signature: String {
        switch self {
        case .byte: return "y"
        case .boolean: return "b"
        case .int16: return "n"
        case .uint16: return "q"
        case .int32: return "i"
        case .uint32: return "u"
        case .int64: return "x"
        case .uint64: return "t"
        case .double: return "d"
        case .string: return "s"
        case .objectPath: return "o"
        case .signature: return "g"
        case .unixFD: return "h"
        case .bytes: return "ay"
        case .array(let element, _): return "a" + element
        case .dictionary(let key, let value, _): return "a{" + key + value + "}"
        case .structure(let fields): return "(" + fields.map(\.signature).joined() + ")"
        case .variant: return "v"
        }
    }
}

// MARK: - Building the shapes BlueZ uses

extension DBusValue {
    /// `a{sv}` from name/value pairs, each value wrapped in a variant.
    public static func properties(_ pairs: [(String, DBusValue)]) -> DBusValue {
        .dictionary(key: "s", value: "v", pairs.map { DictionaryEntry(.string($0.0), .variant($0.1)) })
    }

    /// `as`.
    public static func strings(_ values: [String]) -> DBusValue {
        .array(element: "s", values.map(DBusValue.string))
    }

    /// `ao`.
    public static func objectPaths(_ values: [String]) -> DBusValue {
        .array(element: "o", values.map(DBusValue.objectPath))
    }
}

// MARK: - Reading values defensively

extension DBusValue {
    /// The value inside any number of variant wrappers.
    public var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }

    public var string: String? {
        switch self.unwrapped {
        case .string(let s), .objectPath(let s), .signature(let s): return s
        default: return nil
        }
    }

    public var bool: Bool? {
        if case .boolean(let b) = self.unwrapped { return b }
        return nil
    }

    /// Any integer type that fits in `Int64`.
    public var int64: Int64? {
        switch self.unwrapped {
        case .byte(let v): return Int64(v)
        case .int16(let v): return Int64(v)
        case .uint16(let v): return Int64(v)
        case .int32(let v): return Int64(v)
        case .uint32(let v): return Int64(v)
        case .int64(let v): return v
        case .uint64(let v): return v <= UInt64(Int64.max) ? Int64(v) : nil
        default: return nil
        }
    }

    public var double: Double? {
        if case .double(let d) = self.unwrapped { return d }
        return nil
    }

    /// `ay`, or an `a` of bytes.
    public var bytes: [UInt8]? {
        switch self.unwrapped {
        case .bytes(let b): return b
        case .array("y", let items):
            var out: [UInt8] = []
            out.reserveCapacity(items.count)
            for item in items {
                guard case .byte(let b) = item else { return nil }
                out.append(b)
            }
            return out
        default: return nil
        }
    }

    /// The elements of any array (for `ay`, each byte as ``byte(_:)``).
    public var arrayElements: [DBusValue]? {
        switch self.unwrapped {
        case .array(_, let items): return items
        case .bytes(let b): return b.map(DBusValue.byte)
        default: return nil
        }
    }

    /// A dictionary with string or object-path keys as ordered pairs (later duplicates win in lookups).
    public var stringDictionary: [(String, DBusValue)]? {
        guard case .dictionary(_, _, let entries) = self.unwrapped else { return nil }
        var out: [(String, DBusValue)] = []
        out.reserveCapacity(entries.count)
        for entry in entries {
            guard let key = entry.key.string else { return nil }
            out.append((key, entry.value))
        }
        return out
    }

    /// A dictionary with string keys, for lookups.
    public var stringKeyed: [String: DBusValue]? {
        guard let pairs = self.stringDictionary else { return nil }
        var out: [String: DBusValue] = [:]
        for (key, value) in pairs { out[key] = value }
        return out
    }
}
