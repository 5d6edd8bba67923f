import DBus

/// `org.bluez.AdvertisementMonitorManager1` on each adapter (monitors are per adapter, as in bluetoothd): clients
/// register an object tree of `org.bluez.AdvertisementMonitor1` objects; valid `or_patterns` monitors are activated
/// and told `DeviceFound` / `DeviceLost` as matching wristbands start and stop advertising, without discovery
/// running.
extension Simulator {
    static let monitorManagerInterface = "org.bluez.AdvertisementMonitorManager1"
    static let monitorInterface = "org.bluez.AdvertisementMonitor1"

    func monitorManagerInterface(_ adapter: SimulatedAdapter) -> DBusInterface {
        DBusInterface(name: Simulator.monitorManagerInterface, properties: [
            ("SupportedMonitorTypes", DBusProperty(.strings(["or_patterns"]))),
            ("SupportedFeatures", DBusProperty(.strings([]))),
        ], methods: [
            DBusMethod("RegisterMonitor", in: "o") { [weak self, unowned adapter] call in
                self?.registerMonitor(call, adapter)
            },
            DBusMethod("UnregisterMonitor", in: "o") { [weak self, unowned adapter] call in
                self?.unregisterMonitor(call, adapter)
            },
        ])
    }

    func registerMonitor(_ call: DBusMethodCall, _ adapter: SimulatedAdapter) {
        if self.failIfInjected(call, "RegisterMonitor") { return }
        guard let sender = call.sender, let root = call.arguments[0].string else {
            return call.fail(BlueZError.invalidArguments)
        }
        guard !adapter.monitors.contains(where: { $0.owner == sender && $0.root == root }) else {
            return call.fail(DBusError(name: BlueZError.prefix + "AlreadyExists", message: "Already Exists"))
        }
        call.reply()
        // Like bluetoothd: read the client's tree, activate valid monitors, release invalid ones.
        self.bluez?.call(destination: sender, path: root, interface: "org.freedesktop.DBus.ObjectManager",
                         member: "GetManagedObjects") { [weak self, unowned adapter] result in
            guard let self, case .success(let values) = result, let objects = values.first else { return }
            guard case .dictionary(_, _, let entries) = objects.unwrapped else { return }
            for entry in entries {
                guard let path = entry.key.string,
                      let interfaces = entry.value.stringKeyed,
                      let properties = interfaces[Simulator.monitorInterface]?.stringKeyed else { continue }
                guard properties["Type"]?.string == "or_patterns",
                      let patterns = Simulator.monitorPatterns(properties["Patterns"]), !patterns.isEmpty else {
                    self.logger.warn("releasing invalid advertisement monitor \(sender) \(path)")
                    self.bluez?.call(destination: sender, path: path, interface: Simulator.monitorInterface,
                                     member: "Release") { _ in }
                    continue
                }
                adapter.monitors.append(AdvertisementMonitor(owner: sender, root: root, path: path, patterns: patterns))
                self.bluez?.call(destination: sender, path: path, interface: Simulator.monitorInterface,
                                 member: "Activate") { _ in }
                self.logger.info("advertisement monitor \(sender) \(path) active")
            }
        }
    }

    func unregisterMonitor(_ call: DBusMethodCall, _ adapter: SimulatedAdapter) {
        if self.failIfInjected(call, "UnregisterMonitor") { return }
        guard let sender = call.sender, let root = call.arguments[0].string else {
            return call.fail(BlueZError.invalidArguments)
        }
        let released = adapter.monitors.filter { $0.owner == sender && $0.root == root }
        guard !released.isEmpty else { return call.fail(BlueZError.doesNotExist) }
        adapter.monitors.removeAll { $0.owner == sender && $0.root == root }
        for monitor in released {
            self.bluez?.call(destination: sender, path: monitor.path, interface: Simulator.monitorInterface,
                             member: "Release") { _ in }
        }
        call.reply()
    }

    /// Parses `Patterns` (`a(yyay)`: start position, AD type, content).
    static func monitorPatterns(_ value: DBusValue?) -> [AdvertisementMonitor.Pattern]? {
        guard let items = value?.arrayElements else { return nil }
        var out: [AdvertisementMonitor.Pattern] = []
        for item in items {
            guard case .structure(let fields) = item.unwrapped, fields.count == 3,
                  case .byte(let start) = fields[0], case .byte(let type) = fields[1],
                  let content = fields[2].bytes, !content.isEmpty, Int(start) + content.count <= 31 else { return nil }
            out.append(AdvertisementMonitor.Pattern(start: Int(start), type: type, content: content))
        }
        return out
    }

    func callMonitor(_ monitor: AdvertisementMonitor, _ member: String, _ arguments: [DBusValue]) {
        self.bluez?.call(destination: monitor.owner, path: monitor.path, interface: Simulator.monitorInterface,
                         member: member, arguments: arguments) { _ in }
    }
}
