#if canImport(Glibc)
import Glibc
#endif
import DBus
import EventLoop
import Logging
import Posix

/// `empalink-sim`'s command line (SPEC §13): parse, load the scenario, serve until SIGTERM/SIGINT.
public enum SimulatorCommand {
    static let usage = """
        usage: empalink-sim --bus ADDRESS|--system|--session --devices N [--hrs N] [--adapters N] [--seed S]
                            [--scenario FILE] [--truth DIR] [--log-level error|warn|info|debug]
               empalink-sim --peripheral --adapter hciN [--system|--bus ADDRESS] [--devices 1] [--seed S]
                            [--scenario FILE] [--truth DIR] [--adapter-timeout S] [--log-level L]
               empalink-sim --ward FILE [--bus BOARD=ADDRESS ...] --devices N [--hrs N] [--seed S] [--truth DIR]
                            [--log-level L]

        The first form serves simulated wristbands as a BlueZ look-alike (it owns org.bluez on the bus). The
        second is the peripheral face: one simulated E4 registered with the real bluetoothd as a GATT
        application and advertised on the adapter, for centrals over the air. The third is a ward: one BlueZ
        look-alike per board of the ward scenario, each on its own bus, sharing wristbands that walk between
        them (one board connected to a wristband at a time).

        options:
          --bus ADDRESS    serve on this D-Bus address (e.g. unix:path=/tmp/bus); with --ward,
                           BOARD=ADDRESS gives that board's bus (else its 'bus' in the scenario)
          --system         serve on the system bus ($DBUS_SYSTEM_BUS_ADDRESS or the standard socket;
                           the default with --peripheral)
          --session        serve on the session bus ($DBUS_SESSION_BUS_ADDRESS)
          --devices N      simulated wristbands, 1…255; device k is 00:07:80:A0:01:kk (serial a001kk);
                           with --peripheral only 1 (its address and serial are the adapter's);
                           0 with --hrs for straps alone
          --hrs N          heart-rate straps (Heart Rate Service) after the wristbands: device k is
                           A0:9E:1A:B0:01:kk (serial b001kk); --devices + --hrs at most 255
          --adapters N     adapters hci0…hci(N-1), 1…8 (default 1), each with its own view of the
                           wristbands; a ward board's come from its 'adapters' key
          --seed S         seed of every signal and random choice (default 1)
          --scenario FILE  timing, physiology and scheduled faults (TOML; see Docs/simulator.md)
          --ward FILE      a ward scenario ([ward], [[ward.board]], routes; see Docs/simulator.md),
                           instead of --scenario
          --truth DIR      write the exact truth per device to DIR/<serial>/ (a ward also DIR/ward.csv)
          --peripheral     be a GATT peripheral of the real bluetoothd instead of simulating it
          --adapter hciN   the adapter the peripheral registers on and advertises from (with --peripheral)
          --adapter-timeout S
                           seconds to wait for bluetoothd, the adapter and its power before exiting 1
                           (with --peripheral; default 30)
          --log-level L    error, warn, info (default) or debug
          --help           print this help
        """

    /// Parses `arguments` (without the program name).
    ///
    /// - Returns: the options, or a one-line usage error.
    public static func parse(_ arguments: [String]) -> Result<SimulatorOptions, SimulatorError> {
        var options = SimulatorOptions()
        var sawDevices = false
        var sawAdapterTimeout = false
        var sawAdapters = false
        var buses: [String] = []
        var index = 0
        func value(_ name: String) -> String? {
            guard index + 1 < arguments.count else { return nil }
            index += 1
            return arguments[index]
        }
        while index < arguments.count {
            var argument = arguments[index]
            var inline: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                inline = String(argument[argument.index(after: equals)...])
                argument = String(argument[..<equals])
            }
            func next() -> String? { inline ?? value(argument) }
            switch argument {
            case "--bus":
                guard let address = next(), !address.isEmpty else { return .failure(.init("--bus needs an ADDRESS")) }
                options.bus = .address(address)
                buses.append(address)
            case "--ward":
                guard let path = next(), !path.isEmpty else { return .failure(.init("--ward needs a FILE")) }
                options.wardPath = path
            case "--system": options.bus = .system
            case "--session": options.bus = .session
            case "--devices":
                guard let text = next(), let count = Int(text), (0...255).contains(count) else {
                    return .failure(.init("--devices needs a number from 1 to 255"))
                }
                options.devices = count
                sawDevices = true
            case "--hrs":
                guard let text = next(), let count = Int(text), (0...255).contains(count) else {
                    return .failure(.init("--hrs needs a number from 0 to 255"))
                }
                options.heartRateStraps = count
            case "--adapters":
                guard let text = next(), let count = Int(text), (1...SimulatedAdapter.maximum).contains(count) else {
                    return .failure(.init("--adapters needs a number from 1 to \(SimulatedAdapter.maximum)"))
                }
                options.adapters = count
                sawAdapters = true
            case "--seed":
                guard let text = next(), let seed = UInt64(text) else {
                    return .failure(.init("--seed needs a non-negative integer"))
                }
                options.seed = seed
            case "--scenario":
                guard let path = next(), !path.isEmpty else { return .failure(.init("--scenario needs a FILE")) }
                options.scenarioPath = path
            case "--truth":
                guard let path = next(), !path.isEmpty else { return .failure(.init("--truth needs a DIR")) }
                options.truthDirectory = path
            case "--log-level":
                guard let text = next(), let level = LogLevel(name: text) else {
                    return .failure(.init("--log-level needs one of error, warn, info, debug"))
                }
                options.logLevel = level
            case "--peripheral":
                options.peripheral = true
            case "--adapter":
                guard let name = next(), SimulatorCommand.isAdapterName(name) else {
                    return .failure(.init("--adapter needs an adapter name such as hci0"))
                }
                options.adapter = name
            case "--adapter-timeout":
                guard let text = next(), let seconds = Double(text), seconds > 0, seconds <= 86_400 else {
                    return .failure(.init("--adapter-timeout needs a number of seconds from 0 to 86400"))
                }
                options.adapterTimeout = seconds
                sawAdapterTimeout = true
            case "--help", "-h":
                options.help = true
            default:
                return .failure(.init("unknown option '\(arguments[index])'"))
            }
            index += 1
        }
        if options.help { return .success(options) }
        let total = options.devices + options.heartRateStraps
        guard (1...255).contains(total) else {
            return .failure(.init(options.devices == 0 ? "--devices 0 needs --hrs N"
                                                      : "--devices and --hrs make at most 255 devices"))
        }
        if sawAdapters && (options.wardPath != nil || options.peripheral) {
            return .failure(.init(options.peripheral ? "--adapters is not for --peripheral (it uses --adapter hciN)"
                                  : "--adapters is not for --ward: give a board 'adapters = N' in the ward scenario"))
        }
        if options.wardPath != nil {
            return self.validateWard(options, buses: buses, sawDevices: sawDevices,
                                     sawAdapterTimeout: sawAdapterTimeout)
        }
        if options.peripheral {
            guard options.adapter != nil else { return .failure(.init("--peripheral needs --adapter hciN")) }
            guard options.devices + options.heartRateStraps == 1 else {
                return .failure(.init("--peripheral serves exactly one device (--devices 1, or --devices 0 --hrs 1)"))
            }
            if options.bus == .session {
                return .failure(.init("--peripheral talks to bluetoothd: use --system (the default) or --bus"))
            }
            if options.bus == nil { options.bus = .system }
            return .success(options)
        }
        guard options.adapter == nil else { return .failure(.init("--adapter needs --peripheral")) }
        guard !sawAdapterTimeout else { return .failure(.init("--adapter-timeout needs --peripheral")) }
        guard options.bus != nil else { return .failure(.init("choose a bus: --bus ADDRESS, --system or --session")) }
        guard sawDevices else { return .failure(.init("--devices N is required")) }
        return .success(options)
    }

    /// `hci0` … `hci999`: what bluetoothd names adapters, and safe in an object path.
    static func isAdapterName(_ name: String) -> Bool {
        let digits = name.utf8.dropFirst(3)
        return name.hasPrefix("hci") && (1...3).contains(digits.count)
            && digits.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// Runs the simulator with `arguments` (without the program name).
    ///
    /// - Returns: the exit code: 0 after SIGTERM/SIGINT, 1 runtime failure, 2 usage or scenario error.
    public static func main(arguments: [String]) -> Int32 {
        let options: SimulatorOptions
        switch self.parse(arguments) {
        case .success(let parsed): options = parsed
        case .failure(let error):
            Console.err("empalink-sim: \(error.message)")
            Console.err(self.usage)
            return 2
        }
        if options.help {
            Console.out(self.usage + "\n")
            return 0
        }
        if let wardPath = options.wardPath { return self.runWard(options, path: wardPath) }
        var scenario = Scenario()
        if let path = options.scenarioPath {
            let bytes: [UInt8]
            do {
                bytes = try readFile(atPath: path)
            } catch {
                Console.err("empalink-sim: cannot read scenario \(path): \(error)")
                return 2
            }
            do {
                scenario = try Scenario.parse(String(decoding: bytes, as: UTF8.self))
            } catch {
                Console.err("\(path):\(error.position): error: \(error.message)")
                return 2
            }
            if scenario.ward != nil {
                Console.err("empalink-sim: \(path) is a ward scenario ([ward]): run it with --ward \(path)")
                return 2
            }
        }
        let address: String
        switch options.bus {
        case .address(let value)?: address = value
        case .system?: address = DBusConnection.systemBusAddress
        case .session?, nil:
            guard let session = DBusConnection.sessionBusAddress else {
                Console.err("empalink-sim: --session needs DBUS_SESSION_BUS_ADDRESS")
                return 2
            }
            address = session
        }
        let logger = Logger.standard(identifier: "empalink-sim", level: options.logLevel)
        let loop: EventLoop
        do {
            try EventLoop.blockSignals([SIGTERM, SIGINT, SIGPIPE])
            loop = try EventLoop()
        } catch {
            Console.err("empalink-sim: cannot create the event loop: \(error)")
            return 1
        }
        if options.peripheral {
            return self.runPeripheral(options, scenario: scenario, address: address, logger: logger, loop: loop)
        }
        let simulator = Simulator(busAddress: address, devices: options.devices,
                                  heartRateStraps: options.heartRateStraps, adapters: options.adapters,
                                  seed: options.seed,
                                  scenario: scenario, truthDirectory: options.truthDirectory, loop: loop,
                                  logger: logger)
        var failure: SimulatorError?
        do {
            try loop.onSignal(SIGTERM) { _ in loop.stop() }
            try loop.onSignal(SIGINT) { _ in loop.stop() }
        } catch {
            Console.err("empalink-sim: cannot watch signals: \(error)")
            return 1
        }
        do {
            try simulator.start()
        } catch {
            failure = error
        }
        if let failure {
            Console.err("empalink-sim: \(failure.message)")
            simulator.stop()
            loop.close()
            return 1
        }
        loop.run()
        simulator.stop()
        loop.close()
        return 0
    }

    /// Runs the peripheral face until SIGTERM/SIGINT (0) or a failure (1, one line on stderr).
    static func runPeripheral(_ options: SimulatorOptions, scenario: Scenario, address: String, logger: Logger,
                              loop: EventLoop) -> Int32 {
        let peripheral = PeripheralSimulator(
            busAddress: address, adapter: options.adapter ?? "hci0", seed: options.seed, scenario: scenario,
            truthDirectory: options.truthDirectory,
            adapterTimeout: .milliseconds(Int64((options.adapterTimeout * 1000).rounded())), loop: loop,
            logger: logger, kind: options.heartRateStraps == 1 ? .hrs : .e4)
        var failure: SimulatorError?
        peripheral.onFailure = { error in
            failure = error
            loop.stop()
        }
        do {
            try loop.onSignal(SIGTERM) { _ in loop.stop() }
            try loop.onSignal(SIGINT) { _ in loop.stop() }
            try peripheral.start()
        } catch let error as SimulatorError {
            failure = error
        } catch {
            failure = SimulatorError("cannot watch signals: \(error)")
        }
        if failure == nil { loop.run() }
        peripheral.stop()
        loop.close()
        if let failure {
            Console.err("empalink-sim: \(failure.message)")
            return 1
        }
        return 0
    }
}
