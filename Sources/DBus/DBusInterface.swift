/// One interface of an exported object: its properties (in order) and methods.
public struct DBusInterface {
    public var name: String
    /// Properties in the order `GetAll` reports them; a `nil` value means the property is currently absent
    /// (BlueZ omits, for example, `RSSI` while a device is not being discovered).
    public var properties: [(name: String, property: DBusProperty)]
    public var methods: [DBusMethod]

    public init(name: String, properties: [(String, DBusProperty)] = [], methods: [DBusMethod] = []) {
        self.name = name
        self.properties = properties.map { (name: $0.0, property: $0.1) }
        self.methods = methods
    }

    func propertyIndex(_ name: String) -> Int? {
        self.properties.firstIndex { $0.name == name }
    }

    /// The present properties as `a{sv}`.
    var propertyDictionary: DBusValue {
        .properties(self.properties.compactMap { entry in entry.property.value.map { (entry.name, $0) } })
    }
}

/// A property's value and whether peers may set it.
public struct DBusProperty {
    public var value: DBusValue?
    /// Called for `Properties.Set`; return an error to refuse. Without it the property is read-only.
    public var setter: ((DBusValue) -> DBusError?)?

    public init(_ value: DBusValue?, setter: ((DBusValue) -> DBusError?)? = nil) {
        self.value = value
        self.setter = setter
    }
}

/// An exported method: the handler answers through the ``DBusMethodCall``, now or later.
public struct DBusMethod {
    public var name: String
    /// The argument signature callers must use; a call with another is answered `InvalidArgs`.
    public var inSignature: String
    public var outSignature: String
    public var handler: (DBusMethodCall) -> Void

    public init(_ name: String, in inSignature: String = "", out outSignature: String = "",
                handler: @escaping (DBusMethodCall) -> Void) {
        self.name = name
        self.inSignature = inSignature
        self.outSignature = outSignature
        self.handler = handler
    }
}

/// An incoming method call to an exported object. Answer exactly once with ``reply(_:)`` or ``fail(_:)``; a
/// call dropped unanswered is answered `Failed` so the caller is never left waiting for its timeout.
public final class DBusMethodCall {
    public let message: DBusMessage
    public let arguments: [DBusValue]
    weak var connection: DBusConnection?
    public private(set) var isAnswered = false

    init(message: DBusMessage, arguments: [DBusValue], connection: DBusConnection) {
        self.message = message
        self.arguments = arguments
        self.connection = connection
    }

    deinit {
        if !self.isAnswered {
            self.fail(DBusError(name: DBusError.failedName, message: "the method returned no reply"))
        }
    }

    func markAnswered() { self.isAnswered = true }

    /// The caller's unique bus name.
    public var sender: String? { self.message.sender }

    /// Replies with values. Invalid values turn into an `InvalidArgs` error reply.
    public func reply(_ values: [DBusValue] = []) {
        guard !self.isAnswered else { return }
        self.isAnswered = true
        guard !self.message.noReplyExpected, let connection = self.connection else { return }
        do {
            connection.send(try self.message.methodReturn(values))
        } catch {
            if let reply = try? self.message.errorReply(error) { connection.send(reply) }
        }
    }

    /// Replies with an error, keeping its name (e.g. `org.bluez.Error.InProgress`).
    public func fail(_ error: DBusError) {
        guard !self.isAnswered else { return }
        self.isAnswered = true
        guard !self.message.noReplyExpected, let connection = self.connection,
              let reply = try? self.message.errorReply(error) else { return }
        connection.send(reply)
    }
}
