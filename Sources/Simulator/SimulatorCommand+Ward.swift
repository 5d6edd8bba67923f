#if canImport(Glibc)
import Glibc
#endif
import DBus
import EventLoop
import Logging
import Posix

/// `empalink-sim --ward FILE [--bus BOARD=ADDRESS …]`: one process, one BlueZ face per board of the ward.
extension SimulatorCommand {
    /// The rest of the command line's checks when `--ward` is given.
    static func validateWard(_ parsed: SimulatorOptions, buses: [String], sawDevices: Bool, sawAdapterTimeout: Bool)
        -> Result<SimulatorOptions, SimulatorError>
    {
        var options = parsed
        guard options.scenarioPath == nil else {
            return .failure(.init("--ward FILE is the scenario: leave out --scenario"))
        }
        guard !options.peripheral, options.adapter == nil, !sawAdapterTimeout else {
            return .failure(.init("--ward simulates bluetoothd: it cannot be --peripheral"))
        }
        if options.bus == .system || options.bus == .session {
            return .failure(.init("--ward serves one private bus per board: give --bus BOARD=ADDRESS, not --system "
                                  + "or --session"))
        }
        options.bus = nil
        for bus in buses {
            guard let equals = bus.firstIndex(of: "=") else {
                return .failure(.init("with --ward, --bus needs BOARD=ADDRESS (e.g. a=unix:path=/tmp/a)"))
            }
            let board = String(bus[..<equals])
            let address = String(bus[bus.index(after: equals)...])
            guard WardBoard.isValidName(board), !address.isEmpty else {
                return .failure(.init("with --ward, --bus needs BOARD=ADDRESS (e.g. a=unix:path=/tmp/a)"))
            }
            guard !options.boardBuses.contains(where: { $0.board == board }) else {
                return .failure(.init("--bus gives board '\(board)' twice"))
            }
            options.boardBuses.append(.init(board: board, address: address))
        }
        guard sawDevices else { return .failure(.init("--devices N is required")) }
        return .success(options)
    }

    /// Each board's bus address: the command line's, else the scenario's.
    ///
    /// - Returns: the addresses in board order, or a one-line error.
    static func wardAddresses(_ ward: WardScenario, _ options: SimulatorOptions) -> Result<[String], SimulatorError> {
        for bus in options.boardBuses where ward.board(named: bus.board) == nil {
            return .failure(.init("--bus names board '\(bus.board)', which the ward scenario does not have (it has "
                                  + ward.boards.map(\.name).joined(separator: ", ") + ")"))
        }
        var addresses: [String] = []
        for board in ward.boards {
            guard let address = options.boardBuses.first(where: { $0.board == board.name })?.address ?? board.address
            else {
                return .failure(.init("board '\(board.name)' has no bus: give --bus \(board.name)=ADDRESS "
                                      + "or 'bus' in its [[ward.board]]"))
            }
            guard !addresses.contains(address) else {
                return .failure(.init("board '\(board.name)' has the bus of another board (\(address))"))
            }
            addresses.append(address)
        }
        return .success(addresses)
    }

    /// Runs the ward until SIGTERM/SIGINT.
    ///
    /// - Returns: the exit code: 0 after a signal, 1 runtime failure, 2 scenario or command-line error.
    static func runWard(_ options: SimulatorOptions, path: String) -> Int32 {
        let bytes: [UInt8]
        do {
            bytes = try readFile(atPath: path)
        } catch {
            Console.err("empalink-sim: cannot read ward scenario \(path): \(error)")
            return 2
        }
        let scenario: Scenario
        do {
            scenario = try Scenario.parse(String(decoding: bytes, as: UTF8.self))
        } catch {
            Console.err("\(path):\(error.position): error: \(error.message)")
            return 2
        }
        guard let ward = scenario.ward else {
            Console.err("empalink-sim: \(path) has no [ward] table: a ward scenario needs [[ward.board]]s")
            return 2
        }
        let addresses: [String]
        switch self.wardAddresses(ward, options) {
        case .success(let value): addresses = value
        case .failure(let error):
            Console.err("empalink-sim: \(error.message)")
            return 2
        }
        let logger = Logger.standard(identifier: "empalink-sim", level: options.logLevel)
        let loop: EventLoop
        do {
            try EventLoop.blockSignals([SIGTERM, SIGINT, SIGPIPE])
            loop = try EventLoop()
            try loop.onSignal(SIGTERM) { _ in loop.stop() }
            try loop.onSignal(SIGINT) { _ in loop.stop() }
        } catch {
            Console.err("empalink-sim: cannot create the event loop: \(error)")
            return 1
        }
        let (world, boards, failure) = self.startWard(scenario, ward: ward, addresses: addresses, options: options,
                                                      loop: loop, logger: logger)
        if failure == nil { loop.run() }
        for board in boards { board.stop() }
        world.stop()
        loop.close()
        if let failure {
            Console.err("empalink-sim: \(failure.message)")
            return 1
        }
        return 0
    }

    /// Makes the ward and one simulator per board, and starts them.
    static func startWard(_ scenario: Scenario, ward: WardScenario, addresses: [String], options: SimulatorOptions,
                          loop: EventLoop, logger: Logger) -> (Ward, [Simulator], SimulatorError?)
    {
        let world = Ward(scenario: ward, routes: scenario.routes, seed: options.seed, loop: loop, logger: logger)
        var boards: [Simulator] = []
        // One recorder per wristband, shared: it streams to one board at a time.
        var truths: [Int: TruthRecorder] = [:]
        for (board, address) in zip(ward.boards, addresses) {
            let simulator = Simulator(busAddress: address, devices: options.devices,
                                      heartRateStraps: options.heartRateStraps, adapters: board.adapters,
                                      seed: options.seed,
                                      scenario: scenario, truthDirectory: nil, loop: loop,
                                      logger: logger.with("BOARD", board.name))
            if let directory = options.truthDirectory, truths.isEmpty {
                for device in simulator.wristbands {
                    do {
                        truths[device.index] = try TruthRecorder(directory: directory, serial: device.serial,
                                                                 kind: device.kind)
                    } catch {
                        return (world, boards, SimulatorError("cannot write truth to \(directory)/\(device.serial): "
                                                              + "\(error)"))
                    }
                }
            }
            world.join(simulator, truths: truths)
            boards.append(simulator)
        }
        do {
            try world.start(truthDirectory: options.truthDirectory)
            for board in boards { try board.start() }
        } catch {
            return (world, boards, error)
        }
        logger.info("ward of \(boards.count) board(s): "
            + zip(ward.boards, addresses).map { "\($0.name) on \($1)" }.joined(separator: ", "))
        return (world, boards, nil)
    }
}
