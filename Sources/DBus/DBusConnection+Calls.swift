import CDBus
import EventLoop

/// Holds a reply handler while libdbus owns the pending call; answers exactly once.
///
/// libdbus drops its pending calls when the bus goes away and delivers their synthesized errors to the filter
/// instead of the notify function, so the connection also keeps these by serial and completes them itself.
final class PendingReply {
    let handler: (Result<DBusMessage, DBusError>) -> Void
    let serial: UInt32
    weak var connection: DBusConnection?
    private(set) var isComplete = false

    init(serial: UInt32, connection: DBusConnection, _ handler: @escaping (Result<DBusMessage, DBusError>) -> Void) {
        self.serial = serial
        self.connection = connection
        self.handler = handler
    }

    func complete(_ result: Result<DBusMessage, DBusError>) {
        guard !self.isComplete else { return }
        self.isComplete = true
        self.connection?.pendingReplies[self.serial] = nil
        self.handler(result)
    }

    func complete(with message: DBusMessage) {
        if let error = message.error {
            self.complete(.failure(error))
        } else {
            self.complete(.success(message))
        }
    }
}

private let cPendingNotify: DBusPendingCallNotifyFunction = { pending, data in
    guard let pending, let data else { return }
    let box = Unmanaged<PendingReply>.fromOpaque(data).takeUnretainedValue()
    guard let reply = dbus_pending_call_steal_reply(pending) else {
        box.complete(.failure(DBusError(name: DBusError.noReplyName, message: "no reply")))
        return
    }
    box.complete(with: DBusMessage(owning: reply))
}

private let cPendingFree: DBusFreeFunction = { data in
    guard let data else { return }
    Unmanaged<PendingReply>.fromOpaque(data).release()
}

extension DBusConnection {
    /// Sends a method call; `reply` runs on the loop with the reply or the error (the peer's error name kept,
    /// `NoReply` on timeout, `Disconnected` when the bus is gone). `reply` always runs later, never inside `call`.
    public func call(
        _ message: DBusMessage,
        timeout: Duration = .seconds(25),
        reply: @escaping (Result<DBusMessage, DBusError>) -> Void
    ) {
        self.loop.assertInEventLoop()
        guard !self.isClosed else {
            self.later { reply(.failure(.disconnected)) }
            return
        }
        let milliseconds = CInt(clamping: timeout.components.seconds * 1000
            + timeout.components.attoseconds / 1_000_000_000_000_000)
        var pending: OpaquePointer?
        guard dbus_connection_send_with_reply(self.raw, message.raw, &pending, max(milliseconds, 1)) != 0 else {
            self.later { reply(.failure(.noMemory)) }
            return
        }
        guard let pending else {
            // libdbus gives no pending call when the connection is already closed.
            self.later { reply(.failure(.disconnected)) }
            return
        }
        let record = PendingReply(serial: dbus_message_get_serial(message.raw), connection: self, reply)
        let box = Unmanaged.passRetained(record).toOpaque()
        if dbus_pending_call_set_notify(pending, cPendingNotify, box, cPendingFree) == 0 {
            Unmanaged<PendingReply>.fromOpaque(box).release()
            dbus_pending_call_cancel(pending)
            dbus_pending_call_unref(pending)
            self.later { reply(.failure(.noMemory)) }
            return
        }
        dbus_pending_call_unref(pending)
        self.pendingReplies[record.serial] = record
    }

    /// Completes every outstanding call with `error` (the bus went away, or we closed).
    func failPendingReplies(_ error: DBusError) {
        let outstanding = self.pendingReplies.values.sorted { $0.serial < $1.serial }
        self.pendingReplies = [:]
        for record in outstanding {
            record.complete(.failure(error))
        }
    }

    /// Builds and sends a method call (see ``call(_:timeout:reply:)``); invalid names fail through `reply`.
    public func call(
        destination: String?,
        path: String,
        interface: String,
        member: String,
        arguments: [DBusValue] = [],
        timeout: Duration = .seconds(25),
        reply: @escaping (Result<[DBusValue], DBusError>) -> Void
    ) {
        let message: DBusMessage
        do {
            message = try DBusMessage.methodCall(
                destination: destination, path: path, interface: interface, member: member, arguments: arguments)
        } catch {
            self.later { reply(.failure(error)) }
            return
        }
        self.call(message, timeout: timeout) { result in
            switch result {
            case .success(let message):
                do throws(DBusError) {
                    reply(.success(try message.arguments()))
                } catch {
                    reply(.failure(error))
                }
            case .failure(let error):
                reply(.failure(error))
            }
        }
    }

    /// Queues a message without waiting for a reply (signals, method returns, fire-and-forget calls).
    ///
    /// - Returns: `false` when the connection is closed or out of memory.
    @discardableResult
    public func send(_ message: DBusMessage) -> Bool {
        self.loop.assertInEventLoop()
        guard !self.isClosed else { return false }
        return dbus_connection_send(self.raw, message.raw, nil) != 0
    }

    /// Emits a signal.
    ///
    /// - Throws: ``DBusError`` for invalid names or arguments, or when the connection is closed.
    public func emitSignal(path: String, interface: String, member: String, arguments: [DBusValue]) throws(DBusError) {
        let message = try DBusMessage.signal(path: path, interface: interface, member: member, arguments: arguments)
        guard self.send(message) else { throw .disconnected }
    }

    /// Runs `work` on a later loop pass, so callbacks never run re-entrantly inside the call that caused them.
    func later(_ work: @escaping () -> Void) {
        _ = try? self.loop.scheduleTimer(after: .zero, handler: work)
    }

    // MARK: Signals

    /// Subscribes to signals matching `rule`: tells the bus (`AddMatch`, without waiting) and calls `handler` on
    /// the loop for each matching signal.
    ///
    /// - Returns: a token for ``unsubscribe(_:)``.
    /// - Throws: ``DBusError`` `InvalidArgs` for a rule with invalid names.
    @discardableResult
    public func subscribe(_ rule: DBusMatchRule, handler: @escaping (DBusMessage) -> Void) throws(DBusError) -> UInt64 {
        self.loop.assertInEventLoop()
        guard rule.isValid else { throw .invalidArgs("invalid match rule \(rule.text)") }
        guard !self.isClosed else { throw .disconnected }
        let id = self.nextSubscriptionID
        self.nextSubscriptionID += 1
        self.subscriptions[id] = Subscription(rule: rule, handler: handler)
        self.addMatch(rule)
        if let sender = rule.sender, !sender.hasPrefix(":"), sender != "org.freedesktop.DBus" {
            self.followOwner(of: sender)
        }
        return id
    }

    /// Removes a subscription (and its bus-side match).
    public func unsubscribe(_ id: UInt64) {
        self.loop.assertInEventLoop()
        guard let subscription = self.subscriptions.removeValue(forKey: id), !self.isClosed else { return }
        self.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                  interface: "org.freedesktop.DBus", member: "RemoveMatch",
                  arguments: [.string(subscription.rule.text)]) { _ in }
    }

    func addMatch(_ rule: DBusMatchRule) {
        self.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                  interface: "org.freedesktop.DBus", member: "AddMatch", arguments: [.string(rule.text)]) { _ in }
    }

    func deliverSignal(_ message: DBusMessage) {
        if message.sender == "org.freedesktop.DBus", message.member == "NameOwnerChanged",
           message.interface == "org.freedesktop.DBus" {
            self.noteOwnerChange(message)
        }
        // Handlers may subscribe or unsubscribe: iterate over a snapshot, skipping removed ones.
        let snapshot = self.subscriptions.sorted { $0.key < $1.key }
        for (id, subscription) in snapshot {
            guard self.subscriptions[id] != nil else { continue }
            let owner = subscription.rule.sender.flatMap { self.nameOwners[$0]?.owner }
            if subscription.rule.matches(message, senderOwner: owner) {
                subscription.handler(message)
            }
        }
    }

    // MARK: Name owners

    /// Calls `handler` with the current owner of a well-known name (`nil` when nobody owns it) and again on every
    /// change: how a client notices BlueZ leaving and re-joining the bus.
    ///
    /// - Returns: a token for ``unwatchNameOwner(_:)``.
    @discardableResult
    public func watchNameOwner(_ name: String, handler: @escaping (String?) -> Void) throws(DBusError) -> UInt64 {
        guard DBusNames.isValidBusName(name) else { throw .invalidArgs("invalid bus name \"\(name)\"") }
        let id = self.nextSubscriptionID
        self.nextSubscriptionID += 1
        self.followOwner(of: name)
        self.nameOwners[name]?.watchers[id] = handler
        if let state = self.nameOwners[name], state.subscription != nil, let owner = state.owner {
            self.later { handler(owner) }
        }
        return id
    }

    public func unwatchNameOwner(_ id: UInt64) {
        for name in self.nameOwners.keys {
            self.nameOwners[name]?.watchers[id] = nil
        }
    }

    func followOwner(of name: String) {
        guard self.nameOwners[name] == nil else { return }
        self.nameOwners[name] = NameOwnerState()
        let rule = DBusMatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
                                 member: "NameOwnerChanged", path: "/org/freedesktop/DBus", arg0: name)
        let id = self.nextSubscriptionID
        self.nextSubscriptionID += 1
        // NameOwnerChanged is handled in deliverSignal; the subscription only asks the bus to route it.
        self.subscriptions[id] = Subscription(rule: rule) { _ in }
        self.nameOwners[name]?.subscription = id
        self.addMatch(rule)
        self.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                  interface: "org.freedesktop.DBus", member: "GetNameOwner", arguments: [.string(name)]) {
            [weak self] result in
            guard let self, self.nameOwners[name] != nil else { return }
            let owner: String? = (try? result.get())?.first?.string
            self.setOwner(owner, of: name)
        }
    }

    func noteOwnerChange(_ message: DBusMessage) {
        guard let arguments = try? message.arguments(), arguments.count == 3,
              let name = arguments[0].string, self.nameOwners[name] != nil else { return }
        let newOwner = arguments[2].string.flatMap { $0.isEmpty ? nil : $0 }
        self.setOwner(newOwner, of: name)
    }

    func setOwner(_ owner: String?, of name: String) {
        guard var state = self.nameOwners[name] else { return }
        let changed = state.owner != owner
        state.owner = owner
        self.nameOwners[name] = state
        guard changed else { return }
        for (_, watcher) in state.watchers.sorted(by: { $0.key < $1.key }) {
            watcher(owner)
        }
    }

    // MARK: Names we own

    /// Requests a well-known name (blocking round trip to the bus).
    ///
    /// - Parameters:
    ///   - replaceExisting: take the name from an owner that allowed replacement.
    ///   - allowReplacement: let a later `replaceExisting` request take it from us.
    /// - Returns: `true` when we are now the primary owner.
    /// - Throws: ``DBusError`` from the bus.
    public func requestName(_ name: String, replaceExisting: Bool = false,
                            allowReplacement: Bool = false) throws(DBusError) -> Bool {
        guard DBusNames.isValidBusName(name), !name.hasPrefix(":") else {
            throw .invalidArgs("invalid bus name \"\(name)\"")
        }
        guard !self.isClosed else { throw .disconnected }
        var flags = UInt32(DBUS_NAME_FLAG_DO_NOT_QUEUE)
        if replaceExisting { flags |= UInt32(DBUS_NAME_FLAG_REPLACE_EXISTING) }
        if allowReplacement { flags |= UInt32(DBUS_NAME_FLAG_ALLOW_REPLACEMENT) }
        let result = withDBusError { error in dbus_bus_request_name(self.raw, name, flags, error) }
        let code = try result.get()
        self.scheduleDispatch()
        return code == DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER || code == DBUS_REQUEST_NAME_REPLY_ALREADY_OWNER
    }

    /// Releases a well-known name (blocking round trip to the bus).
    public func releaseName(_ name: String) throws(DBusError) {
        guard DBusNames.isValidBusName(name) else { throw .invalidArgs("invalid bus name \"\(name)\"") }
        guard !self.isClosed else { throw .disconnected }
        _ = try withDBusError { error in dbus_bus_release_name(self.raw, name, error) }.get()
        self.scheduleDispatch()
    }
}
