import DBus
import EventLoop

/// A test stand-in for bluetoothd's *manager* side, owning `org.bluez` on a private bus: `/org/bluez/hciN` with
/// `Adapter1` (Address, Powered), `GattManager1` and `LEAdvertisingManager1`, plus central `Device1` objects on
/// demand. It registers what the peripheral hands it the way bluetoothd 5.66 does (`GetManagedObjects` on the
/// application root, `GetAll` on the advertisement, both from the caller's unique name) and records it, and it
/// calls the characteristics as bluetoothd's `gatt-database.c` would, from its own connection.
final class PeripheralBluetoothd {
    let loop: EventLoop
    let busAddress: String
    let adapterPath: String
    let address: String
    var powered: Bool
    var connection: DBusConnection?

    /// When set, `RegisterApplication` / `RegisterAdvertisement` answer this error.
    var applicationError: DBusError?
    var advertisementError: DBusError?

    // What it received.
    var applicationOwner: String?
    var applicationPath: String?
    /// The application's objects: path → interface → properties.
    var applicationTree: [String: [String: [String: DBusValue]]] = [:]
    var advertisement: [String: DBusValue] = [:]
    var applicationRegistrations = 0
    var advertisementRegistrations = 0
    var powerRequests = 0

    init(loop: EventLoop, busAddress: String, adapter: String = "hci0", address: String = "00:1A:7D:DA:71:13",
         powered: Bool = true) {
        self.loop = loop
        self.busAddress = busAddress
        self.adapterPath = "/org/bluez/" + adapter
        self.address = address
        self.powered = powered
    }

    /// Joins the bus as `org.bluez` (a bluetoothd start).
    func start(exportAdapter: Bool = true, advertising: Bool = true) throws {
        let connection = try DBusConnection.connect(address: self.busAddress, loop: self.loop)
        guard try connection.requestName("org.bluez") else {
            throw DBusError(name: "test.NameTaken", message: "org.bluez is taken")
        }
        self.connection = connection
        try connection.objects.addObjectManager(at: "/")
        if exportAdapter { try self.exportAdapter(advertising: advertising) }
    }

    /// Leaves the bus (a bluetoothd exit): its registrations are gone.
    func stop() {
        self.connection?.close()
        self.connection = nil
        self.applicationOwner = nil
        self.applicationTree = [:]
        self.advertisement = [:]
    }

    /// Exports the adapter; without `advertising`, `LEAdvertisingManager1` comes later
    /// (``exportAdvertisingManager()``), as when bluetoothd still waits for the kernel's advertising features.
    func exportAdapter(advertising: Bool = true) throws {
        guard let connection = self.connection else { return }
        try connection.objects.export(self.adapterPath, interfaces: [
            DBusInterface(name: "org.bluez.Adapter1", properties: [
                ("Address", DBusProperty(.string(self.address))),
                ("AddressType", DBusProperty(.string("public"))),
                ("Name", DBusProperty(.string("test"))),
                ("Alias", DBusProperty(.string("test")) { _ in nil }),
                ("Powered", DBusProperty(.boolean(self.powered)) { [weak self] value in
                    self?.powerRequests += 1
                    self?.powered = value.bool ?? false
                    return nil
                }),
            ]),
            DBusInterface(name: "org.bluez.GattManager1", methods: [
                DBusMethod("RegisterApplication", in: "oa{sv}") { [weak self] call in
                    self?.registerApplication(call)
                },
                DBusMethod("UnregisterApplication", in: "o") { $0.reply() },
            ]),
        ])
        if advertising { try self.exportAdvertisingManager() }
    }

    func exportAdvertisingManager() throws {
        try self.connection?.objects.export(self.adapterPath, interfaces: [
            DBusInterface(name: "org.bluez.LEAdvertisingManager1", properties: [
                ("ActiveInstances", DBusProperty(.byte(0))),
                ("SupportedInstances", DBusProperty(.byte(5))),
            ], methods: [
                DBusMethod("RegisterAdvertisement", in: "oa{sv}") { [weak self] call in
                    self?.registerAdvertisement(call)
                },
                DBusMethod("UnregisterAdvertisement", in: "o") { $0.reply() },
            ]),
        ])
    }

    func removeAdapter() {
        self.connection?.objects.unexport(self.adapterPath)
    }

    func registerApplication(_ call: DBusMethodCall) {
        self.applicationRegistrations += 1
        if let error = self.applicationError { return call.fail(error) }
        guard let owner = call.sender, let path = call.arguments[0].string, let connection = self.connection else {
            return call.fail(DBusError(name: "org.bluez.Error.InvalidArguments", message: "Invalid arguments"))
        }
        connection.call(destination: owner, path: path, interface: "org.freedesktop.DBus.ObjectManager",
                        member: "GetManagedObjects", timeout: .seconds(5)) { [weak self] result in
            guard let self else { return }
            guard case .success(let values) = result, let tree = values.first?.stringDictionary else {
                return call.fail(DBusError(name: "org.bluez.Error.Failed", message: "No object received"))
            }
            var parsed: [String: [String: [String: DBusValue]]] = [:]
            for (objectPath, interfaces) in tree {
                var byName: [String: [String: DBusValue]] = [:]
                for (name, properties) in interfaces.stringDictionary ?? [] {
                    byName[name] = (properties.stringKeyed ?? [:]).mapValues(\.unwrapped)
                }
                parsed[objectPath] = byName
            }
            self.applicationOwner = owner
            self.applicationPath = path
            self.applicationTree = parsed
            call.reply()
        }
    }

    func registerAdvertisement(_ call: DBusMethodCall) {
        self.advertisementRegistrations += 1
        if let error = self.advertisementError { return call.fail(error) }
        guard let owner = call.sender, let path = call.arguments[0].string, let connection = self.connection else {
            return call.fail(DBusError(name: "org.bluez.Error.InvalidArguments", message: "Invalid arguments"))
        }
        connection.call(destination: owner, path: path, interface: "org.freedesktop.DBus.Properties",
                        member: "GetAll", arguments: [.string("org.bluez.LEAdvertisement1")],
                        timeout: .seconds(5)) { [weak self] result in
            guard let self else { return }
            guard case .success(let values) = result, let properties = values.first?.stringKeyed else {
                return call.fail(DBusError(name: "org.bluez.Error.Failed", message: "Failed to parse advertisement."))
            }
            self.advertisement = properties.mapValues(\.unwrapped)
            call.reply()
        }
    }

    // MARK: Centrals

    func devicePath(_ address: String) -> String {
        self.adapterPath + "/dev_" + address.split(separator: ":").joined(separator: "_")
    }

    /// A central connects to us: bluetoothd creates its Device1 with `Connected = true`.
    func connectCentral(_ address: String) throws {
        try self.connection?.objects.export(self.devicePath(address), interfaces: [
            DBusInterface(name: "org.bluez.Device1", properties: [
                ("Address", DBusProperty(.string(address))),
                ("Connected", DBusProperty(.boolean(true))),
            ]),
        ])
    }

    func disconnectCentral(_ address: String) {
        self.connection?.objects.setProperty(self.devicePath(address), interface: "org.bluez.Device1",
                                             name: "Connected", value: .boolean(false))
    }
}
