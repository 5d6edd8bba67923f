import CDBus

/// D-Bus type codes (libdbus defines them as cast macros that Swift does not import).
enum DBusTypeCode {
    static let invalid: CInt = 0
    static let byte = CInt(UInt8(ascii: "y"))
    static let boolean = CInt(UInt8(ascii: "b"))
    static let int16 = CInt(UInt8(ascii: "n"))
    static let uint16 = CInt(UInt8(ascii: "q"))
    static let int32 = CInt(UInt8(ascii: "i"))
    static let uint32 = CInt(UInt8(ascii: "u"))
    static let int64 = CInt(UInt8(ascii: "x"))
    static let uint64 = CInt(UInt8(ascii: "t"))
    static let double = CInt(UInt8(ascii: "d"))
    static let string = CInt(UInt8(ascii: "s"))
    static let objectPath = CInt(UInt8(ascii: "o"))
    static let signature = CInt(UInt8(ascii: "g"))
    static let unixFD = CInt(UInt8(ascii: "h"))
    static let array = CInt(UInt8(ascii: "a"))
    static let variant = CInt(UInt8(ascii: "v"))
    static let structure = CInt(UInt8(ascii: "r"))
    static let dictEntry = CInt(UInt8(ascii: "e"))
}

extension DBusMessage {
    /// Appends arguments.
    ///
    /// Every value is validated first (strings without NUL, valid object paths and signatures, array elements of
    /// the declared type), so a bad value throws and leaves the message unchanged rather than reaching libdbus.
    ///
    /// - Throws: ``DBusError`` `InvalidArgs` for an invalid value, `NoMemory` when libdbus runs out of memory.
    public func append(_ values: [DBusValue]) throws(DBusError) {
        guard !values.isEmpty else { return }
        for value in values {
            try DBusMessage.validate(value)
        }
        var iterator = DBusMessageIter()
        dbus_message_iter_init_append(self.raw, &iterator)
        for value in values {
            guard DBusMessage.append(value, to: &iterator) else { throw .noMemory }
        }
    }

    /// Reads every argument.
    ///
    /// A received ``DBusValue/unixFD(_:)`` is a new descriptor owned by the caller.
    ///
    /// - Throws: ``DBusError`` `InvalidArgs` if the body cannot be read (libdbus validated it on receipt, so this
    ///   only happens for messages it built itself incorrectly).
    public func arguments() throws(DBusError) -> [DBusValue] {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(self.raw, &iterator) != 0 else { return [] }
        var values: [DBusValue] = []
        repeat {
            values.append(try DBusMessage.read(&iterator))
        } while dbus_message_iter_next(&iterator) != 0
        return values
    }

    // MARK: Validation

    static func validate(_ value: DBusValue) throws(DBusError) {
        switch value {
        case .string(let s):
            guard DBusNames.isValidString(s) else { throw .invalidArgs("string contains a NUL character") }
        case .objectPath(let p):
            guard DBusNames.isValidObjectPath(p) else { throw .invalidArgs("invalid object path \"\(p)\"") }
        case .signature(let g):
            guard DBusMessage.isValidSignature(g, single: false) else { throw .invalidArgs("invalid signature \"\(g)\"") }
        case .unixFD(let fd):
            guard fd >= 0 else { throw .invalidArgs("invalid file descriptor \(fd)") }
        case .array(let element, let items):
            guard DBusMessage.isValidSignature(element, single: true) else {
                throw .invalidArgs("invalid array element signature \"\(element)\"")
            }
            for item in items {
                guard item.signature == element else {
                    throw .invalidArgs("array of \"\(element)\" holds a \"\(item.signature)\"")
                }
                try self.validate(item)
            }
        case .dictionary(let key, let valueSignature, let entries):
            guard key.utf8.count == 1, let code = key.utf8.first, DBusMessage.isBasicTypeCode(CInt(code)),
                  DBusMessage.isValidSignature(valueSignature, single: true) else {
                throw .invalidArgs("invalid dictionary signature \"{\(key)\(valueSignature)}\"")
            }
            for entry in entries {
                guard entry.key.signature == key, entry.value.signature == valueSignature else {
                    throw .invalidArgs("dictionary of \"{\(key)\(valueSignature)}\" holds an entry of "
                                           + "\"{\(entry.key.signature)\(entry.value.signature)}\"")
                }
                try self.validate(entry.key)
                try self.validate(entry.value)
            }
        case .structure(let fields):
            guard !fields.isEmpty else { throw .invalidArgs("a struct needs at least one field") }
            for field in fields { try self.validate(field) }
        case .variant(let inner):
            try self.validate(inner)
        case .byte, .boolean, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double, .bytes:
            break
        }
    }

    static func isBasicTypeCode(_ code: CInt) -> Bool {
        dbus_type_is_basic(code) != 0
    }

    static func isValidSignature(_ signature: String, single: Bool) -> Bool {
        guard DBusNames.isValidString(signature), signature.utf8.count <= 255 else { return false }
        var error = CDBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        let valid = single
            ? dbus_signature_validate_single(signature, &error) : dbus_signature_validate(signature, &error)
        return valid != 0
    }

    // MARK: Appending

    static func appendBasic<T>(_ value: T, type: CInt, to iterator: inout DBusMessageIter) -> Bool {
        var copy = value
        return withUnsafePointer(to: &copy) { dbus_message_iter_append_basic(&iterator, type, $0) != 0 }
    }

    static func appendString(_ value: String, type: CInt, to iterator: inout DBusMessageIter) -> Bool {
        value.withCString { pointer in
            var cString: UnsafePointer<CChar>? = pointer
            return dbus_message_iter_append_basic(&iterator, type, &cString) != 0
        }
    }

    static func append(_ value: DBusValue, to iterator: inout DBusMessageIter) -> Bool {
        switch value {
        case .byte(let v): return self.appendBasic(v, type: DBusTypeCode.byte, to: &iterator)
        case .boolean(let v): return self.appendBasic(dbus_bool_t(v ? 1 : 0), type: DBusTypeCode.boolean, to: &iterator)
        case .int16(let v): return self.appendBasic(v, type: DBusTypeCode.int16, to: &iterator)
        case .uint16(let v): return self.appendBasic(v, type: DBusTypeCode.uint16, to: &iterator)
        case .int32(let v): return self.appendBasic(v, type: DBusTypeCode.int32, to: &iterator)
        case .uint32(let v): return self.appendBasic(v, type: DBusTypeCode.uint32, to: &iterator)
        case .int64(let v): return self.appendBasic(v, type: DBusTypeCode.int64, to: &iterator)
        case .uint64(let v): return self.appendBasic(v, type: DBusTypeCode.uint64, to: &iterator)
        case .double(let v): return self.appendBasic(v, type: DBusTypeCode.double, to: &iterator)
        case .unixFD(let v): return self.appendBasic(v, type: DBusTypeCode.unixFD, to: &iterator)
        case .string(let v): return self.appendString(v, type: DBusTypeCode.string, to: &iterator)
        case .objectPath(let v): return self.appendString(v, type: DBusTypeCode.objectPath, to: &iterator)
        case .signature(let v): return self.appendString(v, type: DBusTypeCode.signature, to: &iterator)
        case .bytes(let bytes):
            return self.container(DBusTypeCode.array, signature: "y", in: &iterator) { sub in
                bytes.withUnsafeBufferPointer { buffer in
                    var base = buffer.baseAddress ?? UnsafePointer(bitPattern: 1)
                    return withUnsafePointer(to: &base) { pointer in
                        dbus_message_iter_append_fixed_array(&sub, DBusTypeCode.byte, pointer, CInt(buffer.count)) != 0
                    }
                }
            }
        case .array(let element, let items):
            return self.container(DBusTypeCode.array, signature: element, in: &iterator) { sub in
                items.allSatisfy { self.append($0, to: &sub) }
            }
        case .dictionary(let key, let valueSignature, let entries):
            return self.container(DBusTypeCode.array, signature: "{" + key + valueSignature + "}", in: &iterator) { sub in
                entries.allSatisfy { entry in
                    self.container(DBusTypeCode.dictEntry, signature: nil, in: &sub) { pair in
                        self.append(entry.key, to: &pair) && self.append(entry.value, to: &pair)
                    }
                }
            }
        case .structure(let fields):
            return self.container(DBusTypeCode.structure, signature: nil, in: &iterator) { sub in
                fields.allSatisfy { self.append($0, to: &sub) }
            }
        case .variant(let inner):
            return self.container(DBusTypeCode.variant, signature: inner.signature, in: &iterator) { sub in
                self.append(inner, to: &sub)
            }
        }
    }

    static func container(
        _ type: CInt,
        signature: String?,
        in iterator: inout DBusMessageIter,
        body: (inout DBusMessageIter) -> Bool
    ) -> Bool {
        var sub = DBusMessageIter()
        let opened: Bool
        if let signature {
            opened = signature.withCString { dbus_message_iter_open_container(&iterator, type, $0, &sub) != 0 }
        } else {
            opened = dbus_message_iter_open_container(&iterator, type, nil, &sub) != 0
        }
        guard opened else { return false }
        guard body(&sub) else {
            dbus_message_iter_abandon_container(&iterator, &sub)
            return false
        }
        return dbus_message_iter_close_container(&iterator, &sub) != 0
    }

    // MARK: Reading

    static func readBasic<T>(_ iterator: inout DBusMessageIter, as: T.Type, zero: T) -> T {
        var value = zero
        withUnsafeMutablePointer(to: &value) { dbus_message_iter_get_basic(&iterator, $0) }
        return value
    }

    static func readString(_ iterator: inout DBusMessageIter) -> String {
        var pointer: UnsafePointer<CChar>?
        dbus_message_iter_get_basic(&iterator, &pointer)
        return pointer.map { String(cString: $0) } ?? ""
    }

    static func currentSignature(_ iterator: inout DBusMessageIter) -> String {
        guard let raw = dbus_message_iter_get_signature(&iterator) else { return "" }
        defer { dbus_free(raw) }
        return String(cString: raw)
    }

    static func read(_ iterator: inout DBusMessageIter) throws(DBusError) -> DBusValue {
        let type = dbus_message_iter_get_arg_type(&iterator)
        switch type {
        case DBusTypeCode.byte: return .byte(self.readBasic(&iterator, as: UInt8.self, zero: 0))
        case DBusTypeCode.boolean: return .boolean(self.readBasic(&iterator, as: dbus_bool_t.self, zero: 0) != 0)
        case DBusTypeCode.int16: return .int16(self.readBasic(&iterator, as: Int16.self, zero: 0))
        case DBusTypeCode.uint16: return .uint16(self.readBasic(&iterator, as: UInt16.self, zero: 0))
        case DBusTypeCode.int32: return .int32(self.readBasic(&iterator, as: Int32.self, zero: 0))
        case DBusTypeCode.uint32: return .uint32(self.readBasic(&iterator, as: UInt32.self, zero: 0))
        case DBusTypeCode.int64: return .int64(self.readBasic(&iterator, as: Int64.self, zero: 0))
        case DBusTypeCode.uint64: return .uint64(self.readBasic(&iterator, as: UInt64.self, zero: 0))
        case DBusTypeCode.double: return .double(self.readBasic(&iterator, as: Double.self, zero: 0))
        case DBusTypeCode.unixFD: return .unixFD(self.readBasic(&iterator, as: Int32.self, zero: -1))
        case DBusTypeCode.string: return .string(self.readString(&iterator))
        case DBusTypeCode.objectPath: return .objectPath(self.readString(&iterator))
        case DBusTypeCode.signature: return .signature(self.readString(&iterator))
        case DBusTypeCode.variant:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            return .variant(try self.read(&sub))
        case DBusTypeCode.structure:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            var fields: [DBusValue] = []
            while dbus_message_iter_get_arg_type(&sub) != DBusTypeCode.invalid {
                fields.append(try self.read(&sub))
                dbus_message_iter_next(&sub)
            }
            return .structure(fields)
        case DBusTypeCode.array:
            return try self.readArray(&iterator)
        default:
            throw .invalidArgs("unexpected type code \(type) in message body")
        }
    }

    static func readArray(_ iterator: inout DBusMessageIter) throws(DBusError) -> DBusValue {
        let element = dbus_message_iter_get_element_type(&iterator)
        let signature = self.currentSignature(&iterator)
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(&iterator, &sub)
        if element == DBusTypeCode.byte {
            var pointer: UnsafePointer<UInt8>?
            var count: CInt = 0
            withUnsafeMutablePointer(to: &pointer) { dbus_message_iter_get_fixed_array(&sub, $0, &count) }
            guard let pointer, count > 0 else { return .bytes([]) }
            return .bytes(Array(UnsafeBufferPointer(start: pointer, count: Int(count))))
        }
        if element == DBusTypeCode.dictEntry {
            // "a{KV}": K is one character, V is the rest up to the closing brace.
            let inner = signature.utf8.dropFirst(2).dropLast()
            let key = String(decoding: inner.prefix(1), as: UTF8.self)
            let value = String(decoding: inner.dropFirst(), as: UTF8.self)
            var entries: [DBusValue.DictionaryEntry] = []
            while dbus_message_iter_get_arg_type(&sub) == DBusTypeCode.dictEntry {
                var pair = DBusMessageIter()
                dbus_message_iter_recurse(&sub, &pair)
                let k = try self.read(&pair)
                guard dbus_message_iter_next(&pair) != 0 else { throw .invalidArgs("dictionary entry without value") }
                let v = try self.read(&pair)
                entries.append(.init(k, v))
                dbus_message_iter_next(&sub)
            }
            return .dictionary(key: key, value: value, entries)
        }
        var items: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&sub) != DBusTypeCode.invalid {
            items.append(try self.read(&sub))
            dbus_message_iter_next(&sub)
        }
        return .array(element: String(signature.dropFirst()), items)
    }
}
