#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import Logging
import Posix

/// The physical ward behind a ward-mode simulator (SPEC §18): one ``Simulator`` per board, each the BlueZ face of
/// that board's bus, and the world they share — one clock, each wristband's position, its radio link (one central
/// at a time, as an E4) and its recording (sessions and truth continue whichever board connects).
///
/// Every board keeps its own view of a wristband (exported, discovered, connected *on that bus*); the ward decides
/// what no board may decide alone: whether the wristband is heard there (distance, the board's radio) and whether it
/// is free (``holder(of:)``). A wristband holds one link: it stops advertising as soon as a link is up, so another
/// board's `Connect` finds nobody to answer, listens on and times out as bluetoothd's does unless the wristband comes
/// free first (``Simulator/awaitAdvertisement(_:until:)``).
///
/// Owned by the loop thread, as the simulators are.
final class Ward {
    let scenario: WardScenario
    /// The walks by device index; the control interface's `Walk` replaces one.
    private(set) var routes: [Int: WardRoute]
    let seed: UInt64
    let loop: EventLoop
    let logger: Logger
    /// The boards' simulators, in ``WardScenario/boards`` order.
    private(set) var boards: [Simulator] = []
    /// The board holding each wristband's link, by device index.
    private var holders: [Int: Int] = [:]
    /// Each wristband's last session number, by device index (the next board's start command continues it).
    var sessions: [Int: Int] = [:]
    /// Until when each board's radio is deaf (`radio_off`), simulator seconds.
    private var deafUntil: [Double]
    private var eventTimers: [TimerHandle] = []
    /// `ward.csv`: every link up and down, refusal and radio event.
    private var truth: TruthFile?
    let startInstant: MonotonicInstant
    let startWall: Double

    /// - Parameters:
    ///   - scenario: the boards, radio model and events.
    ///   - routes: the wristbands' walks by device index; the others stand at the origin.
    ///   - seed: the seed of the RSSI noise (the same as the devices').
    init(scenario: WardScenario, routes: [Int: WardRoute], seed: UInt64, loop: EventLoop, logger: Logger) {
        self.scenario = scenario
        self.routes = routes
        self.seed = seed
        self.loop = loop
        self.logger = logger
        self.deafUntil = Array(repeating: 0, count: scenario.boards.count)
        self.startInstant = .now
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        self.startWall = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// Simulator seconds since start, the clock every board shares.
    var now: Double {
        let elapsed = self.startInstant.duration(to: .now).components
        return Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
    }

    /// Makes `simulator` board `index`: it takes the ward's clock and its truth recorders.
    func join(_ simulator: Simulator, truths: [Int: TruthRecorder]) {
        simulator.ward = self
        simulator.boardIndex = self.boards.count
        simulator.startInstant = self.startInstant
        simulator.startWall = self.startWall
        simulator.truths = truths
        self.boards.append(simulator)
    }

    /// Opens `DIR/ward.csv` (`directory` `nil`: no truth) and schedules the board events.
    ///
    /// - Throws: ``SimulatorError`` when the file or a timer cannot be made.
    func start(truthDirectory directory: String?) throws(SimulatorError) {
        if let directory {
            do {
                if mkdir(directory, 0o755) != 0 && errno != EEXIST { throw Errno.current }
                let header = "t,wall,board,serial,event,reason" + (self.adapterColumn ? ",adapter" : "")
                self.truth = try TruthFile(path: directory + "/ward.csv", header: header)
            } catch {
                throw SimulatorError("cannot write the ward truth to \(directory)/ward.csv: \(error)")
            }
        }
        for event in self.scenario.events {
            do {
                self.eventTimers.append(try self.loop.scheduleTimer(
                    after: .microseconds(Int64(event.at * 1e6))) { [weak self] in self?.apply(event) })
            } catch {
                throw SimulatorError("cannot schedule the ward events: \(error)")
            }
        }
    }

    func stop() {
        for timer in self.eventTimers { _ = self.loop.cancel(timer) }
        self.eventTimers = []
        self.truth?.flush()
    }

    // MARK: Radio

    /// Where wristband `device` is at simulator time `t`.
    func position(of device: Int, at t: Double) -> (x: Double, y: Double) {
        self.routes[device]?.position(at: t) ?? (0, 0)
    }

    /// From now on `device` walks in a straight line from where it is at `t` to (`x`, `y`), arriving `seconds` later,
    /// and stays there (the control interface's `Walk`; its scripted route is forgotten).
    func walk(_ device: SimulatedDevice, toX x: Double, y: Double, over seconds: Double, at t: Double, board: Int) {
        let extent = Scenario.wardExtent
        let to = (x: min(max(x, extent.lowerBound), extent.upperBound), y: min(max(y, extent.lowerBound),
                                                                                  extent.upperBound))
        let from = self.position(of: device.index, at: t)
        let arrival = t + max(seconds, 0)
        self.routes[device.index] = WardRoute([WardWaypoint(t: t, x: from.x, y: from.y),
                                               WardWaypoint(t: arrival, x: to.x, y: to.y)])
        self.record(board: board, device, "walk", "to \(to.x) \(to.y) by \(TruthRecorder.time(arrival)) s")
    }

    func distance(of device: Int, toBoard board: Int, at t: Double) -> Double {
        self.scenario.distance(from: self.position(of: device, at: t), toBoard: board)
    }

    /// The RSSI board `board` measures of `device` at `t`: the path loss plus noise that is a pure function of the
    /// seed, the pair and the whole second, so a run is reproducible whatever the timing of the calls.
    func rssi(of device: Int, atBoard board: Int, at t: Double) -> Int16 {
        let key = SimRandom.mix(self.seed ^ SimRandom.mix(UInt64(device) << 8 | UInt64(board)) ^ 0x3A7D_0000)
        let gaussian = SimRandom.noise(key: key, index: Int(t.rounded(.down)))
        return self.scenario.pathLoss.rssi(distance: self.distance(of: device, toBoard: board, at: t),
                                           gaussian: gaussian)
    }

    /// Whether board `board`'s radio is working at `t`.
    func radioWorks(_ board: Int, at t: Double) -> Bool { t >= self.deafUntil[board] }

    /// Whether board `board` hears `device` advertise at `t`: its radio works, the wristband is free (an E4 does
    /// not advertise while connected) and loud enough there.
    func hears(_ device: Int, atBoard board: Int, at t: Double) -> Bool {
        self.radioWorks(board, at: t) && self.holders[device] == nil
            && self.scenario.pathLoss.hears(self.rssi(of: device, atBoard: board, at: t))
    }

    /// Whether a link between `device` and board `board` holds (or could be made) at `t`: the radio works and the
    /// noise-free RSSI is above the link floor.
    func linkHolds(_ device: Int, atBoard board: Int, at t: Double) -> Bool {
        self.radioWorks(board, at: t)
            && self.scenario.pathLoss.linkHolds(distance: self.distance(of: device, toBoard: board, at: t))
    }

    // MARK: Arbitration

    /// The board holding `device`'s link, if any.
    func holder(of device: Int) -> Int? { self.holders[device] }

    /// The name of the board holding `device`'s link, `""` when free.
    func holderName(of device: Int) -> String {
        self.holders[device].map { self.scenario.boards[$0].name } ?? ""
    }

    /// Why board `board` cannot reach `device` at `t` (another board holds it, the radio is off, too far), or `nil`.
    func refusal(of device: Int, atBoard board: Int, at t: Double) -> String? {
        if let holder = self.holders[device], holder != board {
            return "connected to \(self.scenario.boards[holder].name)"
        }
        if !self.radioWorks(board, at: t) { return "radio off" }
        if !self.scenario.pathLoss.linkHolds(distance: self.distance(of: device, toBoard: board, at: t)) {
            return "out of range"
        }
        return nil
    }

    /// Board `board`'s link to `device` comes up, unless another board holds it.
    ///
    /// - Returns: whether `board` now holds the link (already holding it counts).
    func claim(_ device: SimulatedDevice, board: Int) -> Bool {
        if let holder = self.holders[device.index] {
            if holder == board { return true }
            self.record(board: board, device, "refused", "connected to \(self.scenario.boards[holder].name)")
            return false
        }
        self.holders[device.index] = board
        self.record(board: board, device, "connect", "")
        return true
    }

    /// Board `board` records that its `Connect` to `device` will go unanswered, and why.
    func refused(_ device: SimulatedDevice, board: Int, reason: String) {
        self.record(board: board, device, "refused", reason)
    }

    /// Board `board`'s link to `device` went down.
    func release(_ device: SimulatedDevice, board: Int, reason: String) {
        guard self.holders[device.index] == board else { return }
        self.holders[device.index] = nil
        self.record(board: board, device, "disconnect", reason)
    }

    // MARK: Events

    func apply(_ event: WardEvent) {
        let board = self.boards[event.board]
        let name = self.scenario.boards[event.board].name
        switch event.action {
        case .radioOff(let seconds):
            let now = self.now
            self.logger.info("board \(name): radio off for \(seconds) s")
            self.deafUntil[event.board] = now + seconds
            self.recordBoard(event.board, "radio_off", "for \(seconds) s")
            board.radioFailed()
            self.eventTimers.append(contentsOf: [board.after(milliseconds: Int(seconds * 1000)) { [weak self] in
                self?.logger.info("board \(name): radio back")
                self?.recordBoard(event.board, "radio_on", "")
            }].compactMap { $0 })
        case .powerOff(let seconds):
            self.logger.info("board \(name): adapter off for \(seconds) s")
            self.recordBoard(event.board, "power_off", "for \(seconds) s", adapter: "hci0")
            _ = board.apply(.powerOff(seconds: seconds))
        }
    }

    // MARK: Truth

    /// Whether `ward.csv` has an `adapter` column: only when some board has several adapters, so that a ward of
    /// one-adapter boards writes the file it always did (readers go by column name: Tests/integration/wardtruth.py).
    var adapterColumn: Bool { self.scenario.boards.contains { $0.adapters > 1 } }

    private func record(board: Int, _ device: SimulatedDevice, _ event: String, _ reason: String) {
        self.line(board: board, serial: device.serial, event, reason, adapter: "hci\(device.adapterIndex)")
    }

    private func recordBoard(_ board: Int, _ event: String, _ reason: String, adapter: String = "") {
        self.line(board: board, serial: "", event, reason, adapter: adapter)
    }

    /// One row, written through at once: links change seldom and a test may read the file while the ward runs.
    private func line(board: Int, serial: String, _ event: String, _ reason: String, adapter: String) {
        guard let truth = self.truth else { return }
        let t = self.now
        // Reasons are ours, but keep the CSV sound whatever they say.
        let clean = String(reason.map { $0 == "," || $0 == "\n" ? ";" : $0 })
        truth.line("\(TruthRecorder.time(t)),\(TruthRecorder.time(self.startWall + t)),"
            + "\(self.scenario.boards[board].name),\(serial),\(event),\(clean)"
            + (self.adapterColumn ? "," + adapter : ""))
        truth.flush()
    }
}
