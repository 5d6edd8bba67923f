import DBus
import EventLoop
import Posix

/// A BlueZ client on the event loop: an object cache kept current by signals (never polled), and the calls the
/// agent needs — discovery, connections, GATT reads, writes and notifications.
///
/// It subscribes to `InterfacesAdded`, `InterfacesRemoved` and `PropertiesChanged` from `org.bluez` before the
/// first `GetManagedObjects`, follows the name's owner so a bluetoothd restart is seen (``BlueZEvent/unavailable``
/// then ``BlueZEvent/available`` with a fresh snapshot), and reports every change through ``onEvent``.
/// Everything runs on the loop thread.
public final class BlueZClient {
    public let connection: DBusConnection
    public private(set) var cache = BlueZObjectCache()
    /// Whether BlueZ is on the bus and the snapshot is loaded.
    public private(set) var isAvailable = false
    /// BlueZ's current unique bus name.
    public private(set) var owner: String?
    /// Replies to our calls that do not have BlueZ's shape (a `GetManagedObjects` that is no `a{oa{sa{sv}}}`, an
    /// `AcquireNotify` without an fd, with an MTU outside 23…517 or a socket that is not `SOCK_SEQPACKET`, …):
    /// refused, never trusted, and counted here (the agent's metrics `bluez`).
    public internal(set) var malformedReplies: UInt64 = 0
    /// What the latest malformed reply (or signal, see ``BlueZObjectCache/malformedSignals``) was, for the journal.
    public internal(set) var lastMalformed: String?

    /// Times `org.bluez` left an owner (a bluetoothd restart, or another connection taking the name over).
    public internal(set) var ownerChanges: UInt64 = 0
    /// Calls in flight when the owner changed: failed there and then (`org.empalink.Error.OwnerChanged`).
    public internal(set) var abandonedCalls: UInt64 = 0
    /// Replies that arrived for abandoned calls, from an owner that no longer owns the name: never acted on.
    public internal(set) var staleReplies: UInt64 = 0

    /// Called on the loop thread for every change.
    public var onEvent: ((BlueZEvent) -> Void)?
    /// Called on the loop thread when `org.bluez` leaves an owner: the old and new unique names (`nil`: none) and
    /// how many calls in flight were abandoned.
    public var onOwnerChange: ((_ from: String, _ to: String?, _ abandoned: Int) -> Void)?

    /// The completions of calls in flight, by call number; an owner change fails them all (``ownerChanged(_:)``).
    var pending: [UInt64: (Result<[DBusValue], DBusError>) -> Void] = [:]
    var nextCall: UInt64 = 0

    var subscriptions: [UInt64] = []
    var ownerWatch: UInt64?
    /// Increases with every owner change, so a snapshot that arrives for an older owner is ignored.
    var generation = 0

    public init(connection: DBusConnection) {
        self.connection = connection
    }

    /// Subscribes to BlueZ's signals, then loads the snapshot whenever BlueZ is (or comes back) on the bus.
    ///
    /// - Throws: ``DBusError`` when the subscriptions cannot be made (closed connection).
    public func start() throws(DBusError) {
        let objectManager = DBusMatchRule(sender: BlueZNames.service, interface: BlueZNames.objectManager)
        let properties = DBusMatchRule(sender: BlueZNames.service, interface: BlueZNames.properties,
                                       member: "PropertiesChanged", pathNamespace: BlueZNames.root)
        self.subscriptions.append(try self.connection.subscribe(objectManager) { [weak self] message in
            self?.handleObjectManager(message)
        })
        self.subscriptions.append(try self.connection.subscribe(properties) { [weak self] message in
            self?.handlePropertiesChanged(message)
        })
        self.ownerWatch = try self.connection.watchNameOwner(BlueZNames.service) { [weak self] owner in
            self?.ownerChanged(owner)
        }
    }

    /// Stops listening. Notification streams the caller opened stay its own to close.
    public func stop() {
        for id in self.subscriptions { self.connection.unsubscribe(id) }
        self.subscriptions = []
        if let watch = self.ownerWatch { self.connection.unwatchNameOwner(watch) }
        self.ownerWatch = nil
    }

    /// A new owner (or none) of `org.bluez`: the old owner's objects are gone, and so is any answer it still owes.
    /// Calls in flight to it fail now — after ``BlueZEvent/unavailable``, so their callers already know why — and a
    /// reply that still comes from it (it may answer after losing the name) is never acted on.
    func ownerChanged(_ owner: String?) {
        let previous = self.owner
        self.generation += 1
        self.owner = owner
        let abandoned = self.pending.sorted { $0.key < $1.key }.map(\.value)
        if previous != nil {
            self.pending = [:]
            self.ownerChanges &+= 1
            self.abandonedCalls &+= UInt64(abandoned.count)
        }
        if self.isAvailable || !self.cache.objects.isEmpty {
            self.isAvailable = false
            self.cache.removeAll()
            self.onEvent?(.unavailable)
        }
        if let previous {
            self.onOwnerChange?(previous, owner, abandoned.count)
            let error = DBusError(name: BlueZNames.Error.ownerChanged,
                                  message: "org.bluez changed owner (from \(previous)) during the call")
            for completion in abandoned { completion(.failure(error)) }
        }
        guard owner != nil else { return }
        self.loadSnapshot()
    }

    /// Asks for `GetManagedObjects` and replaces the cache with the answer.
    func loadSnapshot() {
        let generation = self.generation
        self.connection.call(destination: BlueZNames.service, path: "/", interface: BlueZNames.objectManager,
                             member: "GetManagedObjects", timeout: .seconds(10)) { [weak self] result in
            guard let self, generation == self.generation else { return }
            switch result {
            case .success(let values):
                guard let first = values.first, self.cache.load(managedObjects: first) else {
                    // Not BlueZ's shape: counted, and asked again (a second later, as after a failure).
                    self.malformed("GetManagedObjects reply of signature \(values.map(\.signature).joined())")
                    self.retrySnapshot(generation)
                    return
                }
                self.isAvailable = true
                self.onEvent?(.available)
            case .failure:
                // BlueZ is starting up or went away again; the next owner change retries.
                self.retrySnapshot(generation)
            }
        }
    }

    func retrySnapshot(_ generation: Int) {
        _ = try? self.connection.loop.scheduleTimer(after: .seconds(1)) { [weak self] in
            guard let self, generation == self.generation, self.owner != nil else { return }
            self.loadSnapshot()
        }
    }

    /// Counts a reply that is not BlueZ's shape and remembers what it was.
    func malformed(_ what: String) {
        self.malformedReplies &+= 1
        self.lastMalformed = what
    }

    func handleObjectManager(_ message: DBusMessage) {
        guard self.isAvailable, message.sender == self.owner || self.owner == nil,
              let arguments = try? message.arguments() else { return }
        switch message.member {
        case "InterfacesAdded":
            if let (path, interfaces) = self.cache.interfacesAdded(arguments) {
                self.onEvent?(.interfacesAdded(path: path, interfaces: interfaces))
            } else {
                self.lastMalformed = "InterfacesAdded of signature \(arguments.map(\.signature).joined())"
            }
        case "InterfacesRemoved":
            if let (path, interfaces) = self.cache.interfacesRemoved(arguments) {
                self.onEvent?(.interfacesRemoved(path: path, interfaces: interfaces))
            } else {
                self.lastMalformed = "InterfacesRemoved of signature \(arguments.map(\.signature).joined())"
            }
        default:
            break
        }
    }

    func handlePropertiesChanged(_ message: DBusMessage) {
        guard self.isAvailable, let path = message.path, let arguments = try? message.arguments(),
              let (interface, names) = self.cache.propertiesChanged(path: path, arguments) else { return }
        self.onEvent?(.propertiesChanged(path: path, interface: interface, names: names))
    }

    // MARK: Views

    public var adapters: [BlueZAdapterInfo] {
        self.cache.paths(with: BlueZNames.adapter).compactMap(self.adapter(at:))
    }

    public func adapter(at path: String) -> BlueZAdapterInfo? {
        self.cache.adapter(at: path)
    }

    /// The adapter named `name` (`hci0`), if present.
    public func adapter(named name: String) -> BlueZAdapterInfo? {
        self.adapter(at: BlueZNames.root + "/" + name)
    }

    public func devices(on adapter: String) -> [BlueZDeviceInfo] {
        self.cache.paths(with: BlueZNames.device, below: adapter).compactMap(self.device(at:))
    }

    public func device(at path: String) -> BlueZDeviceInfo? {
        self.cache.device(at: path)
    }

    /// The device's GATT characteristics (present once services are resolved) that have a valid UUID.
    public func characteristics(of device: String) -> [BlueZCharacteristicInfo] {
        self.cache.characteristics(of: device)
    }

    /// Whether the adapter offers `AdvertisementMonitorManager1` (bluetoothd's experimental features).
    public func offersAdvertisementMonitors(_ adapter: String) -> Bool {
        self.cache.properties(adapter, BlueZNames.advertisementMonitorManager) != nil
    }
}
