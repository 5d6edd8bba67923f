import BlueZ
import DBus

/// Passive scanning for background mode (SPEC §5): where the adapter offers `AdvertisementMonitorManager1`
/// with `or_patterns` (bluetoothd's experimental features), background mode registers an advertisement monitor
/// that matches what the profiles advertise (the E4 family's name) instead of duty-cycling discovery, so the radio
/// stays passive.
extension EmpaticaAPI {
    static let monitorRoot = "/org/empalink/monitor"
    static let monitorPath = EmpaticaAPI.monitorRoot + "/e4"
    static let monitorInterface = "org.bluez.AdvertisementMonitor1"

    /// Whether the adapter offers or-pattern advertisement monitors.
    var monitorsSupported: Bool {
        guard self.options.useAdvertisementMonitor,
              let manager = self.bluez.cache.properties(self.adapterPath, BlueZNames.advertisementMonitorManager)
        else { return false }
        let types = manager["SupportedMonitorTypes"]?.arrayElements?.compactMap(\.string) ?? []
        return types.contains("or_patterns")
    }

    /// Registers the monitor; calls `completion(true)` once BlueZ accepted it.
    func registerMonitor(completion: @escaping (Bool) -> Void) {
        guard self.monitorsSupported else { return completion(false) }
        let objects = self.bluez.connection.objects
        let patterns = DBusValue.array(element: "(yyay)", self.options.profiles.flatMap(\.advertisementPatterns).map {
            .structure([.byte($0.offset), .byte($0.adType), .bytes($0.bytes)])
        })
        do {
            try objects.addObjectManager(at: EmpaticaAPI.monitorRoot)
            try objects.export(EmpaticaAPI.monitorPath, interfaces: [
                DBusInterface(name: EmpaticaAPI.monitorInterface, properties: [
                    ("Type", DBusProperty(.string("or_patterns"))),
                    ("Patterns", DBusProperty(patterns)),
                ], methods: [
                    DBusMethod("Release") { [weak self] call in
                        self?.monitorActive = false
                        call.reply()
                    },
                    DBusMethod("Activate") { [weak self] call in
                        self?.monitorActive = true
                        call.reply()
                    },
                    DBusMethod("DeviceFound", in: "o") { [weak self] call in
                        self?.monitorFound(call.arguments.first?.string)
                        call.reply()
                    },
                    DBusMethod("DeviceLost", in: "o") { call in call.reply() },
                ]),
            ])
        } catch {
            return completion(false)
        }
        self.bluez.connection.call(destination: BlueZNames.service, path: self.adapterPath,
                                   interface: BlueZNames.advertisementMonitorManager, member: "RegisterMonitor",
                                   arguments: [.objectPath(EmpaticaAPI.monitorRoot)]) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success:
                self.monitorRegistered = true
                completion(true)
            case .failure:
                self.bluez.connection.objects.unexport(EmpaticaAPI.monitorPath)
                completion(false)
            }
        }
    }

    func unregisterMonitor() {
        guard self.monitorRegistered else { return }
        self.monitorRegistered = false
        self.monitorActive = false
        self.bluez.connection.call(destination: BlueZNames.service, path: self.adapterPath,
                                   interface: BlueZNames.advertisementMonitorManager, member: "UnregisterMonitor",
                                   arguments: [.objectPath(EmpaticaAPI.monitorRoot)]) { _ in }
        self.bluez.connection.objects.unexport(EmpaticaAPI.monitorPath)
    }

    /// A wristband advertised: BlueZ has (re)created its object; connect it if it is wanted.
    func monitorFound(_ path: String?) {
        self.monitorMatches &+= 1
        self.sawAdvertisement()
        guard let path else { return }
        self.deviceChanged(path)
        self.devicesByPath[path]?.objectsChanged()
    }
}
