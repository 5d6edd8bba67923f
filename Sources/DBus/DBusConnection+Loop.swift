import CDBus
import EventLoop
import Posix

// libdbus calls these C functions with `data` = the unretained connection; `close()` and `deinit` remove them
// before the connection goes away.

private func connection(_ data: UnsafeMutableRawPointer?) -> DBusConnection? {
    data.map { Unmanaged<DBusConnection>.fromOpaque($0).takeUnretainedValue() }
}

private let cAddWatch: DBusAddWatchFunction = { watch, data in
    guard let watch, let connection = connection(data) else { return 0 }
    return connection.addWatch(watch) ? 1 : 0
}

private let cRemoveWatch: DBusRemoveWatchFunction = { watch, data in
    guard let watch, let connection = connection(data) else { return }
    connection.removeWatch(watch)
}

private let cToggleWatch: DBusWatchToggledFunction = { watch, data in
    guard let watch, let connection = connection(data) else { return }
    connection.updateRegistration(for: dbus_watch_get_unix_fd(watch))
}

private let cAddTimeout: DBusAddTimeoutFunction = { timeout, data in
    guard let timeout, let connection = connection(data) else { return 0 }
    return connection.armTimeout(timeout) ? 1 : 0
}

private let cRemoveTimeout: DBusRemoveTimeoutFunction = { timeout, data in
    guard let timeout, let connection = connection(data) else { return }
    connection.disarmTimeout(timeout)
}

private let cToggleTimeout: DBusTimeoutToggledFunction = { timeout, data in
    guard let timeout, let connection = connection(data) else { return }
    connection.disarmTimeout(timeout)
    _ = connection.armTimeout(timeout)
}

private let cDispatchStatusChanged: DBusDispatchStatusFunction = { _, status, data in
    guard status == DBUS_DISPATCH_DATA_REMAINS, let connection = connection(data) else { return }
    connection.scheduleDispatch()
}

private let cMessageFilter: DBusHandleMessageFunction = { _, message, data in
    guard let message, let connection = connection(data) else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    return connection.handleIncoming(DBusMessage(retaining: message))
}

extension DBusConnection {
    func attachToLoop() throws(DBusError) {
        self.loop.assertInEventLoop()
        let data = Unmanaged.passUnretained(self).toOpaque()
        guard dbus_connection_add_filter(self.raw, cMessageFilter, data, nil) != 0,
              dbus_connection_set_watch_functions(self.raw, cAddWatch, cRemoveWatch, cToggleWatch, data, nil) != 0,
              dbus_connection_set_timeout_functions(self.raw, cAddTimeout, cRemoveTimeout, cToggleTimeout, data, nil) != 0
        else {
            throw .noMemory
        }
        dbus_connection_set_dispatch_status_function(self.raw, cDispatchStatusChanged, data, nil)
        // Messages may have arrived with the Hello reply.
        self.scheduleDispatch()
    }

    // MARK: Watches

    /// - Returns: whether the socket is watched as libdbus asks; `false` makes libdbus fail the call that added
    ///   the watch (``connect(address:loop:)`` then throws), instead of a connection that never reads.
    func addWatch(_ watch: OpaquePointer) -> Bool {
        let fd = dbus_watch_get_unix_fd(watch)
        guard fd >= 0 else { return false }
        self.watchesByDescriptor[fd, default: WatchSet()].watches.append(watch)
        guard self.updateRegistration(for: fd) else {
            self.watchesByDescriptor[fd]?.watches.removeAll { $0 == watch }
            if self.watchesByDescriptor[fd]?.watches.isEmpty == true { self.watchesByDescriptor[fd] = nil }
            return false
        }
        return true
    }

    func removeWatch(_ watch: OpaquePointer) {
        let fd = dbus_watch_get_unix_fd(watch)
        if fd >= 0, self.watchesByDescriptor[fd] != nil {
            self.watchesByDescriptor[fd]?.watches.removeAll { $0 == watch }
            self.updateRegistration(for: fd)
            return
        }
        // libdbus may report -1 for a watch whose socket is already closed: find it by identity.
        for (descriptor, set) in self.watchesByDescriptor where set.watches.contains(watch) {
            self.watchesByDescriptor[descriptor]?.watches.removeAll { $0 == watch }
            self.updateRegistration(for: descriptor)
        }
    }

    /// Makes the socket's loop registration match the union of its enabled watches.
    ///
    /// When the loop refuses (epoll's limits), the error is kept in ``loopError`` and the connection is closed on
    /// the next loop pass, so that its owner hears ``onDisconnect`` rather than waiting on a socket nobody reads.
    ///
    /// - Returns: whether the registration matches.
    @discardableResult
    func updateRegistration(for fd: CInt) -> Bool {
        guard var set = self.watchesByDescriptor[fd] else { return true }
        var failure: Errno?
        var interest: IOEvents = []
        for watch in set.watches where dbus_watch_get_enabled(watch) != 0 {
            let flags = dbus_watch_get_flags(watch)
            if flags & DBUS_WATCH_READABLE.rawValue != 0 { interest.insert(.readable) }
            if flags & DBUS_WATCH_WRITABLE.rawValue != 0 { interest.insert(.writable) }
        }
        switch (set.registration, interest.isEmpty) {
        case (let registration?, true):
            self.loop.deregister(registration)
            set.registration = nil
        case (nil, false):
            do throws(Errno) {
                set.registration = try self.loop.register(FileDescriptor(rawValue: fd), interest: interest) {
                    [weak self] events in
                    self?.handleSocket(fd, events: events)
                }
            } catch {
                failure = error
            }
        case (let registration?, false):
            do throws(Errno) {
                try self.loop.reregister(registration, interest: interest)
            } catch {
                self.loop.deregister(registration)
                set.registration = nil
                failure = error
            }
        case (nil, true):
            break
        }
        if set.watches.isEmpty {
            if let registration = set.registration { self.loop.deregister(registration) }
            self.watchesByDescriptor[fd] = nil
        } else {
            self.watchesByDescriptor[fd] = set
        }
        guard let failure else { return true }
        if self.loopError == nil { self.loopError = failure }
        self.scheduleClose()
        return false
    }

    /// Closes the connection on the next loop pass (not inside the libdbus callback that found the problem).
    func scheduleClose() {
        guard !self.isClosed, !self.closeScheduled else { return }
        self.closeScheduled = true
        do throws(Errno) {
            _ = try self.loop.scheduleTimer(after: .zero) { [weak self] in self?.close() }
        } catch {
            // The loop itself is closed: nothing runs on it any more.
        }
    }

    func handleSocket(_ fd: CInt, events: IOEvents) {
        guard !self.isClosed, let set = self.watchesByDescriptor[fd] else { return }
        var problems: UInt32 = 0
        if events.contains(.error) { problems |= DBUS_WATCH_ERROR.rawValue }
        if events.contains(.hangup) { problems |= DBUS_WATCH_HANGUP.rawValue }
        for watch in set.watches {
            // A watch handled earlier in this pass may have removed this one.
            guard !self.isClosed, self.watchesByDescriptor[fd]?.watches.contains(watch) == true,
                  dbus_watch_get_enabled(watch) != 0 else { continue }
            let wanted = dbus_watch_get_flags(watch)
            var flags = problems
            if events.contains(.readable) && wanted & DBUS_WATCH_READABLE.rawValue != 0 {
                flags |= DBUS_WATCH_READABLE.rawValue
            }
            if events.contains(.writable) && wanted & DBUS_WATCH_WRITABLE.rawValue != 0 {
                flags |= DBUS_WATCH_WRITABLE.rawValue
            }
            if flags != 0 { _ = dbus_watch_handle(watch, flags) }
        }
        self.dispatchAll()
    }

    // MARK: Timeouts

    func armTimeout(_ timeout: OpaquePointer) -> Bool {
        guard dbus_timeout_get_enabled(timeout) != 0 else { return true }
        let interval = Duration.milliseconds(max(Int(dbus_timeout_get_interval(timeout)), 1))
        do {
            self.timers[timeout] = try self.loop.scheduleTimer(after: interval, repeating: interval) { [weak self] in
                guard let self, !self.isClosed, self.timers[timeout] != nil else { return }
                _ = dbus_timeout_handle(timeout)
                self.dispatchAll()
            }
            return true
        } catch {
            return false
        }
    }

    func disarmTimeout(_ timeout: OpaquePointer) {
        if let timer = self.timers.removeValue(forKey: timeout) {
            self.loop.cancel(timer)
        }
    }

    // MARK: Dispatch

    func scheduleDispatch() {
        guard !self.dispatchScheduled, !self.isClosed else { return }
        self.dispatchScheduled = true
        _ = try? self.loop.scheduleTimer(after: .zero) { [weak self] in
            guard let self else { return }
            self.dispatchScheduled = false
            self.dispatchAll()
        }
    }

    /// Delivers every message libdbus has queued: pending-call replies, then our filter for the rest.
    func dispatchAll() {
        guard !self.isClosed else { return }
        while dbus_connection_dispatch(self.raw) == DBUS_DISPATCH_DATA_REMAINS {}
    }

    func handleIncoming(_ message: DBusMessage) -> DBusHandlerResult {
        switch message.kind {
        case .signal:
            if message.interface == "org.freedesktop.DBus.Local", message.member == "Disconnected" {
                self.fireDisconnect()
                return DBUS_HANDLER_RESULT_HANDLED
            }
            self.deliverSignal(message)
            return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        case .methodCall:
            if let server = self.objectServer, server.handle(message) {
                return DBUS_HANDLER_RESULT_HANDLED
            }
            return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        case .methodReturn, .error:
            // A reply libdbus could not match to its pending call (it drops them on disconnect).
            if let record = self.pendingReplies[message.replySerial] {
                record.complete(with: message)
                return DBUS_HANDLER_RESULT_HANDLED
            }
            return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        case .invalid:
            return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        }
    }
}
