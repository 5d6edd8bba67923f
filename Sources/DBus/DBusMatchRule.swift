/// A signal match rule: sent to the bus (`AddMatch`) so it routes the signals to us, and applied locally so
/// each subscription sees only its own signals.
public struct DBusMatchRule: Hashable, Sendable {
    /// Sender: a unique name or a well-known name (matched locally through the name's current owner).
    public var sender: String?
    public var interface: String?
    public var member: String?
    public var path: String?
    /// The path or anything below it.
    public var pathNamespace: String?
    /// The first argument, when it is a string.
    public var arg0: String?

    public init(
        sender: String? = nil,
        interface: String? = nil,
        member: String? = nil,
        path: String? = nil,
        pathNamespace: String? = nil,
        arg0: String? = nil
    ) {
        self.sender = sender
        self.interface = interface
        self.member = member
        self.path = path
        self.pathNamespace = pathNamespace
        self.arg0 = arg0
    }

    /// The rule in the bus's syntax, e.g. `type='signal',sender='org.bluez',interface='…'`.
    public var text: String {
        var parts = ["type='signal'"]
        func add(_ key: String, _ value: String?) {
            guard let value else { return }
            // Values are quoted; an apostrophe is written as '\'' (the bus's escaping rule).
            parts.append("\(key)='" + value.split(separator: "'", omittingEmptySubsequences: false)
                .joined(separator: "'\\''") + "'")
        }
        add("sender", self.sender)
        add("interface", self.interface)
        add("member", self.member)
        add("path", self.path)
        add("path_namespace", self.pathNamespace)
        add("arg0", self.arg0)
        return parts.joined(separator: ",")
    }

    /// Whether the rule's fields are valid D-Bus names (an invalid rule would make the bus reject `AddMatch`).
    var isValid: Bool {
        if let sender, !DBusNames.isValidBusName(sender) { return false }
        if let interface, !DBusNames.isValidInterfaceName(interface) { return false }
        if let member, !DBusNames.isValidMemberName(member) { return false }
        if let path, !DBusNames.isValidObjectPath(path) { return false }
        if let pathNamespace, !DBusNames.isValidObjectPath(pathNamespace) { return false }
        if let arg0, !DBusNames.isValidString(arg0) { return false }
        return true
    }

    /// Local matching. `senderOwner` is the current unique owner of a well-known `sender` (`nil` if unknown, in
    /// which case the bus's own filtering is trusted).
    func matches(_ message: DBusMessage, senderOwner: String?) -> Bool {
        guard message.kind == .signal else { return false }
        if let sender {
            let actual = message.sender
            if sender.hasPrefix(":") {
                if actual != sender { return false }
            } else if let senderOwner, actual != senderOwner, actual != sender {
                return false
            }
        }
        if let interface, message.interface != interface { return false }
        if let member, message.member != member { return false }
        if let path, message.path != path { return false }
        if let pathNamespace {
            guard let actual = message.path else { return false }
            let prefix = pathNamespace == "/" ? "/" : pathNamespace + "/"
            if actual != pathNamespace && !actual.hasPrefix(prefix) { return false }
        }
        if let arg0 {
            guard let first = (try? message.arguments())?.first, case .string(let value) = first, value == arg0 else {
                return false
            }
        }
        return true
    }
}
