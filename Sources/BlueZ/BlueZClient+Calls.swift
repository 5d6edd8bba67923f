#if canImport(Glibc)
import Glibc
#endif
import DBus
import Posix

/// BlueZ method calls. Every completion runs later on the loop thread, with BlueZ's error names kept
/// (`org.bluez.Error.InProgress`, `…Failed: le-connection-abort-by-local`, …) for the caller's policy.
extension BlueZClient {
    public typealias Completion = (Result<Void, DBusError>) -> Void

    func call(
        _ path: String,
        _ interface: String,
        _ member: String,
        _ arguments: [DBusValue] = [],
        timeout: Duration = .seconds(25),
        completion: @escaping (Result<[DBusValue], DBusError>) -> Void
    ) {
        let id = self.nextCall
        self.nextCall &+= 1
        self.pending[id] = completion
        self.connection.call(destination: BlueZNames.service, path: path, interface: interface, member: member,
                             arguments: arguments, timeout: timeout) { [weak self] result in
            guard let self else { return }
            guard let completion = self.pending.removeValue(forKey: id) else {
                // Abandoned at an owner change: this answer (or its timeout) is the old owner's. Counted, never
                // acted on, and a descriptor it carries is not leaked.
                if case .success(let values) = result {
                    self.staleReplies &+= 1
                    for case .unixFD(let raw) in values { FileDescriptor(rawValue: raw).close() }
                } else if case .failure(let error) = result, error.name != DBusError.noReplyName {
                    self.staleReplies &+= 1
                }
                return
            }
            completion(result)
        }
    }

    func callVoid(_ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue] = [],
                  timeout: Duration = .seconds(25), completion: @escaping Completion) {
        self.call(path, interface, member, arguments, timeout: timeout) { result in
            completion(result.map { _ in () })
        }
    }

    // MARK: Adapter

    /// Restricts discovery to LE devices at or above `rssi` dBm; `nil` sets no threshold.
    ///
    /// Only `Transport` and `RSSI` are sent: `DuplicateData` and `Discoverable` corrupt bluetoothd's heap before
    /// BlueZ 5.71 (Debian 12 and Raspberry Pi OS ship 5.66). With an `RSSI` key bluetoothd asks the kernel for a
    /// service discovery with that threshold, and the kernel then drops every report whose RSSI is "not
    /// available" (127) — which some controllers (and BlueZ's virtual `btvirt`) send.
    public func setDiscoveryFilter(adapter: String, rssi: Int?, completion: @escaping Completion) {
        var fields: [(String, DBusValue)] = [("Transport", .string("le"))]
        if let rssi { fields.append(("RSSI", .int16(Int16(clamping: rssi)))) }
        let filter = DBusValue.properties(fields)
        self.callVoid(adapter, BlueZNames.adapter, "SetDiscoveryFilter", [filter], completion: completion)
    }

    public func startDiscovery(adapter: String, completion: @escaping Completion) {
        self.callVoid(adapter, BlueZNames.adapter, "StartDiscovery", completion: completion)
    }

    public func stopDiscovery(adapter: String, completion: @escaping Completion) {
        self.callVoid(adapter, BlueZNames.adapter, "StopDiscovery", completion: completion)
    }

    /// Removes a device object (and BlueZ's memory of it).
    public func removeDevice(adapter: String, device: String, completion: @escaping Completion) {
        self.callVoid(adapter, BlueZNames.adapter, "RemoveDevice", [.objectPath(device)], completion: completion)
    }

    /// Powers the adapter on or off (the watchdog's last resort).
    public func setPowered(adapter: String, _ powered: Bool, completion: @escaping Completion) {
        self.callVoid(adapter, BlueZNames.properties, "Set",
                      [.string(BlueZNames.adapter), .string("Powered"), .variant(.boolean(powered))],
                      completion: completion)
    }

    // MARK: Device

    /// Connects; succeeds once BlueZ reports the connection (services may resolve later: watch
    /// `ServicesResolved`).
    public func connect(device: String, timeout: Duration, completion: @escaping Completion) {
        self.callVoid(device, BlueZNames.device, "Connect", timeout: timeout, completion: completion)
    }

    public func disconnect(device: String, completion: @escaping Completion) {
        self.callVoid(device, BlueZNames.device, "Disconnect", completion: completion)
    }

    // MARK: GATT

    /// Acquires a characteristic's notifications as a socket: one read is one notification.
    ///
    /// - Parameter completion: the descriptor (non-blocking, owned by the caller) and the MTU.
    public func acquireNotify(
        characteristic: String,
        completion: @escaping (Result<(FileDescriptor, Int), DBusError>) -> Void
    ) {
        self.call(characteristic, BlueZNames.gattCharacteristic, "AcquireNotify", [.properties([])]) { result in
            switch result {
            case .failure(let error):
                completion(.failure(error))
            case .success(let values):
                // BlueZ answers (h, q): the fd and the negotiated ATT MTU, 23…517. The MTU sizes the receive
                // buffer, so a value outside ATT's range is refused, not trusted (2^63 would be an allocation).
                guard values.count == 2, case .unixFD(let raw) = values[0],
                      case .uint16(let mtu) = values[1].unwrapped, Self.attMTURange.contains(Int(mtu))
                else {
                    // Never leak a descriptor from a malformed reply.
                    for case .unixFD(let raw) in values { FileDescriptor(rawValue: raw).close() }
                    let what = "AcquireNotify reply (\(values.map(\.signature).joined())) "
                        + "\(values.count == 2 ? "with MTU \(values[1].int64.map(String.init) ?? "?")" : "")"
                    self.malformed(what + " on " + characteristic)
                    completion(.failure(DBusError(name: BlueZNames.Error.malformedReply,
                                                  message: "malformed AcquireNotify reply: expected (h, q 23…517)")))
                    return
                }
                let fd = FileDescriptor(rawValue: raw)
                // One read is one notification only on a SOCK_SEQPACKET socket (what bluetoothd hands out): a stream
                // socket, a pipe or a file would run notifications together or never end.
                if let kind = Self.socketType(fd), kind != CInt(SOCK_SEQPACKET.rawValue) {
                    fd.close()
                    self.malformed("AcquireNotify fd of socket type \(kind) (not SOCK_SEQPACKET) on " + characteristic)
                    completion(.failure(DBusError(name: BlueZNames.Error.malformedReply,
                                                  message: "AcquireNotify fd is not a SOCK_SEQPACKET socket")))
                    return
                }
                do {
                    try fd.setNonBlocking(true)
                    try fd.setCloseOnExec(true)
                } catch {
                    fd.close()
                    completion(.failure(DBusError(name: BlueZNames.Error.failed, message: "\(error)")))
                    return
                }
                completion(.success((fd, Int(clamping: mtu))))
            }
        }
    }

    /// ATT's MTU range: 23 (the minimum) to 517 (`BT_ATT_MAX_LE_MTU`).
    static let attMTURange = 23...517

    /// `SO_TYPE` of `fd`, or -1 when it is not a socket at all (a pipe, a file); `nil` only if `getsockopt` fails
    /// otherwise.
    static func socketType(_ fd: FileDescriptor) -> CInt? {
        var kind: CInt = 0
        var length = socklen_t(MemoryLayout<CInt>.size)
        guard getsockopt(fd.rawValue, SOL_SOCKET, SO_TYPE, &kind, &length) == 0 else {
            return errno == ENOTSOCK ? -1 : nil
        }
        return kind
    }

    /// Starts notifications delivered as `PropertiesChanged(Value)` (the fallback when AcquireNotify is refused).
    public func startNotify(characteristic: String, completion: @escaping Completion) {
        self.callVoid(characteristic, BlueZNames.gattCharacteristic, "StartNotify", completion: completion)
    }

    public func stopNotify(characteristic: String, completion: @escaping Completion) {
        self.callVoid(characteristic, BlueZNames.gattCharacteristic, "StopNotify", completion: completion)
    }

    /// Writes a value, with a response (`request`) or without (`command`).
    public func writeValue(characteristic: String, _ bytes: [UInt8], withResponse: Bool = true,
                           completion: @escaping Completion) {
        let options = DBusValue.properties([("type", .string(withResponse ? "request" : "command"))])
        self.callVoid(characteristic, BlueZNames.gattCharacteristic, "WriteValue", [.bytes(bytes), options],
                      completion: completion)
    }

    public func readValue(characteristic: String, completion: @escaping (Result<[UInt8], DBusError>) -> Void) {
        self.call(characteristic, BlueZNames.gattCharacteristic, "ReadValue", [.properties([])]) { result in
            switch result {
            case .failure(let error): completion(.failure(error))
            case .success(let values):
                guard let bytes = values.first?.bytes else {
                    completion(.failure(DBusError(name: BlueZNames.Error.failed, message: "malformed ReadValue reply")))
                    return
                }
                completion(.success(bytes))
            }
        }
    }
}
