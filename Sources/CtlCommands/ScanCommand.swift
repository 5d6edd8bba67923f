import Agent
import Bluetooth
import BlueZ
import Config
import DBus
import E4
import EmpaLink
import EventLoop
import Posix

/// `empalinkctl scan`: discovers wristbands now and lists them with whether the agent would connect them.
public enum ScanCommand: CtlCommand {
    public static let name = "scan"
    public static let summary = "discover wristbands now: address, serial, name, RSSI, allowed or not"
    public static let usage = """
        empalinkctl scan [--seconds N] [--config PATH]
          --seconds  how long to scan (1-300, default 10)
          --config   agent configuration for the adapter, RSSI filter, whitelist and API key
                     (default /etc/empalink/empalinkd.toml)
        A wristband is allowed when it is whitelisted and the configured API key unlocks it.
        """

    public static func run(arguments: [String]) -> Int32 {
        let values: [String: String]
        switch CtlSupport.flags(arguments, allowed: ["--seconds", "--config"]) {
        case .success(let parsed): values = parsed
        case .failure(let message):
            Console.err("scan: \(message.text)")
            Console.err("usage: \(self.usage)")
            return 2
        }
        guard let seconds = CtlSupport.seconds(values["--seconds"], default: 10, range: 1...300) else {
            Console.err("scan: --seconds expects a whole number from 1 to 300")
            return 2
        }
        let configuration: AgentConfiguration?
        switch CtlSupport.configuration(path: values["--config"], command: "scan") {
        case .success(let loaded): configuration = loaded
        case .failure(let exit): return exit.code
        }
        let grant = self.grant(configuration)
        guard let (loop, connection) = CtlSupport.connect(command: "scan") else { return 1 }
        let adapterName = configuration?.bluetooth.adapter ?? "hci0"
        let adapter = BlueZNames.root + "/" + adapterName
        let client = BlueZClient(connection: connection)
        var failure: String?
        var scanning = false
        client.onEvent = { event in
            guard event == .available, !scanning else { return }
            guard let info = client.adapter(at: adapter), info.powered else {
                failure = "adapter \(adapterName) is \(client.adapter(at: adapter) == nil ? "absent" : "powered off")"
                loop.stop()
                return
            }
            scanning = true
            client.setDiscoveryFilter(adapter: adapter, rssi: configuration?.bluetooth.rssiMin ?? -100) { _ in
                client.startDiscovery(adapter: adapter) { result in
                    if case .failure(let error) = result, error.name != BlueZNames.Error.inProgress {
                        failure = "cannot start discovery: \(error)"
                        loop.stop()
                    }
                }
            }
        }
        do {
            try client.start()
            _ = try loop.scheduleTimer(after: .seconds(5)) {
                if !client.isAvailable {
                    failure = "BlueZ is not running (no org.bluez on the system bus)"
                    loop.stop()
                }
            }
            _ = try loop.scheduleTimer(after: .seconds(Int64(seconds))) { loop.stop() }
        } catch {
            Console.err("scan: error: \(error)")
            return 1
        }
        loop.run()
        let devices = client.devices(on: adapter)
        if scanning {
            client.stopDiscovery(adapter: adapter) { _ in loop.stop() }
            _ = try? loop.scheduleTimer(after: .seconds(2)) { loop.stop() }
            loop.run()
        }
        connection.close()
        loop.close()
        if let failure {
            Console.err("scan: error: \(failure)")
            return 1
        }
        Console.out(self.table(devices, configuration: configuration, grant: grant))
        return 0
    }

    static func grant(_ configuration: AgentConfiguration?) -> Result<Keyring.Grant, CtlSupport.Message> {
        guard let configuration else { return .failure(CtlSupport.Message("no configuration")) }
        let key: String?
        do {
            key = try APIKey.load(configuration.auth)
        } catch {
            return .failure(CtlSupport.Message(error.message))
        }
        guard let key else { return .failure(CtlSupport.Message("no API key configured")) }
        guard let bytes = try? readFile(atPath: configuration.auth.keyring, limit: 4 << 20) else {
            return .failure(CtlSupport.Message("cannot read keyring \(configuration.auth.keyring)"))
        }
        guard let keyring = try? Keyring.parse(bytes) else { return .failure(CtlSupport.Message("invalid keyring")) }
        return keyring.authenticate(apiKey: key, today: CalendarDay.today).mapError { CtlSupport.Message($0.description) }
    }

    static func table(_ devices: [BlueZDeviceInfo], configuration: AgentConfiguration?,
                      grant: Result<Keyring.Grant, CtlSupport.Message>) -> String {
        var rows = [["ADDRESS", "SERIAL", "NAME", "RSSI", "ALLOWED"]]
        let profiles = EmpaticaAPI.Options().profiles
        for device in devices {
            guard let address = device.address, let name = device.name,
                  profiles.contains(where: { $0.recognizes(name: name, serviceUUIDs: device.serviceUUIDs) })
            else { continue }
            let serial = address.serial
            let whitelisted = configuration?.wristbands.contains {
                $0.serial == serial || $0.address == address.description
            } ?? false
            let allowed: String
            switch (whitelisted, grant) {
            case (false, _): allowed = "no: not whitelisted"
            case (true, .failure(let reason)): allowed = "no: \(reason.text)"
            case (true, .success(let grant)): allowed = grant.allows(serial: serial) ? "yes" : "no: key does not unlock it"
            }
            rows.append([address.description, serial, name, device.rssi.map(String.init) ?? "-", allowed])
        }
        if rows.count == 1 { return "no wristbands found" }
        let widths = (0..<5).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { index, cell in
                index == 4 ? cell : cell + String(repeating: " ", count: widths[index] - cell.count)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}
