import CDBus

/// A D-Bus message: owns one reference to a libdbus `DBusMessage`.
///
/// Build method calls, returns, errors and signals with the factory methods; they validate names first, because
/// libdbus aborts the process on invalid ones. Read arguments with ``arguments()``.
public final class DBusMessage: @unchecked Sendable {
    // @unchecked: a message is built or read by one thread at a time; libdbus messages are not shared mutably.

    /// The kinds of message.
    public enum Kind: Sendable, Equatable {
        case methodCall, methodReturn, error, signal, invalid
    }

    let raw: OpaquePointer

    /// Takes over a reference the caller owns.
    init(owning raw: OpaquePointer) {
        self.raw = raw
    }

    /// Adds a reference to a message libdbus lends us (filters, pending-call replies are stolen instead).
    init(retaining raw: OpaquePointer) {
        dbus_message_ref(raw)
        self.raw = raw
    }

    deinit {
        dbus_message_unref(self.raw)
    }

    // MARK: Factories

    /// A method call.
    ///
    /// - Throws: ``DBusError`` (`InvalidArgs`) for an invalid destination, path, interface or member.
    public static func methodCall(
        destination: String?,
        path: String,
        interface: String?,
        member: String,
        arguments: [DBusValue] = []
    ) throws(DBusError) -> DBusMessage {
        if let destination, !DBusNames.isValidBusName(destination) {
            throw .invalidArgs("invalid bus name \"\(destination)\"")
        }
        guard DBusNames.isValidObjectPath(path) else { throw .invalidArgs("invalid object path \"\(path)\"") }
        if let interface, !DBusNames.isValidInterfaceName(interface) {
            throw .invalidArgs("invalid interface name \"\(interface)\"")
        }
        guard DBusNames.isValidMemberName(member) else { throw .invalidArgs("invalid member name \"\(member)\"") }
        guard let raw = dbus_message_new_method_call(destination, path, interface, member) else { throw .noMemory }
        let message = DBusMessage(owning: raw)
        try message.append(arguments)
        return message
    }

    /// A signal.
    ///
    /// - Throws: ``DBusError`` (`InvalidArgs`) for an invalid path, interface or member.
    public static func signal(
        path: String,
        interface: String,
        member: String,
        arguments: [DBusValue] = []
    ) throws(DBusError) -> DBusMessage {
        guard DBusNames.isValidObjectPath(path) else { throw .invalidArgs("invalid object path \"\(path)\"") }
        guard DBusNames.isValidInterfaceName(interface) else {
            throw .invalidArgs("invalid interface name \"\(interface)\"")
        }
        guard DBusNames.isValidMemberName(member) else { throw .invalidArgs("invalid member name \"\(member)\"") }
        guard let raw = dbus_message_new_signal(path, interface, member) else { throw .noMemory }
        let message = DBusMessage(owning: raw)
        try message.append(arguments)
        return message
    }

    /// The successful reply to this method call.
    public func methodReturn(_ arguments: [DBusValue] = []) throws(DBusError) -> DBusMessage {
        guard self.kind == .methodCall else { throw .invalidArgs("only a method call has a reply") }
        guard let raw = dbus_message_new_method_return(self.raw) else { throw .noMemory }
        let message = DBusMessage(owning: raw)
        try message.append(arguments)
        return message
    }

    /// An error reply to this method call.
    public func errorReply(_ error: DBusError) throws(DBusError) -> DBusMessage {
        guard self.kind == .methodCall else { throw .invalidArgs("only a method call has a reply") }
        let name = DBusNames.isValidInterfaceName(error.name) ? error.name : DBusError.failedName
        let text = error.message.replacingNULs()
        guard let raw = dbus_message_new_error(self.raw, name, text) else { throw .noMemory }
        return DBusMessage(owning: raw)
    }

    // MARK: Header

    public var kind: Kind {
        switch dbus_message_get_type(self.raw) {
        case DBUS_MESSAGE_TYPE_METHOD_CALL: return .methodCall
        case DBUS_MESSAGE_TYPE_METHOD_RETURN: return .methodReturn
        case DBUS_MESSAGE_TYPE_ERROR: return .error
        case DBUS_MESSAGE_TYPE_SIGNAL: return .signal
        default: return .invalid
        }
    }

    public var path: String? { dbus_message_get_path(self.raw).map { String(cString: $0) } }
    public var interface: String? { dbus_message_get_interface(self.raw).map { String(cString: $0) } }
    public var member: String? { dbus_message_get_member(self.raw).map { String(cString: $0) } }
    public var errorName: String? { dbus_message_get_error_name(self.raw).map { String(cString: $0) } }
    public var sender: String? { dbus_message_get_sender(self.raw).map { String(cString: $0) } }
    public var destination: String? { dbus_message_get_destination(self.raw).map { String(cString: $0) } }
    public var signature: String { dbus_message_get_signature(self.raw).map { String(cString: $0) } ?? "" }
    public var serial: UInt32 { dbus_message_get_serial(self.raw) }
    public var replySerial: UInt32 { dbus_message_get_reply_serial(self.raw) }

    /// Whether the sender asked for no reply.
    public var noReplyExpected: Bool { dbus_message_get_no_reply(self.raw) != 0 }

    /// For an error message: the error, with the first string argument as its message.
    public var error: DBusError? {
        guard self.kind == .error else { return nil }
        let text = (try? self.arguments())?.first?.string ?? ""
        return DBusError(name: self.errorName ?? DBusError.failedName, message: text)
    }
}

extension String {
    /// The string with NUL characters removed, for the few places (error messages) where we would rather
    /// send a slightly altered text than nothing.
    func replacingNULs() -> String {
        guard self.utf8.contains(0) else { return self }
        return String(decoding: self.utf8.filter { $0 != 0 }, as: UTF8.self)
    }
}
