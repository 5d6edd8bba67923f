import EventLoop
import Testing

@testable import Simulator

/// Ward mode's pure parts: routes, the path-loss model, the scenario tables and the command line.
@Suite struct WardModelTests {
    @Test func aRouteIsLinearBetweenWaypointsAndHeldOutsideThem() {
        let route = WardRoute([WardWaypoint(t: 10, x: 0, y: 0), WardWaypoint(t: 20, x: 10, y: 0),
                               WardWaypoint(t: 30, x: 10, y: -20)])
        #expect(route.position(at: 0) == (0, 0))
        #expect(route.position(at: 10) == (0, 0))
        #expect(route.position(at: 15) == (5, 0))
        #expect(route.position(at: 20) == (10, 0))
        #expect(route.position(at: 25) == (10, -10))
        #expect(route.position(at: 30) == (10, -20))
        #expect(route.position(at: 1e6) == (10, -20))
        #expect(WardRoute.standing(x: 3, y: 4).position(at: 99) == (3, 4))
        // Two waypoints at one time: a jump, the later one wins from then on.
        let jump = WardRoute([WardWaypoint(t: 0, x: 0, y: 0), WardWaypoint(t: 5, x: 0, y: 0),
                              WardWaypoint(t: 5, x: 50, y: 0)])
        #expect(jump.position(at: 5.001) == (50, 0))
    }

    @Test func pathLossFollowsTheLogDistanceModel() {
        var model = PathLossModel()
        model.txPower = -59
        model.exponent = 3
        #expect(model.meanRSSI(distance: 1) == -59)
        #expect(abs(model.meanRSSI(distance: 10) - -89) < 1e-9)
        #expect(abs(model.meanRSSI(distance: 100) - -119) < 1e-9)
        #expect(model.meanRSSI(distance: 0) == model.meanRSSI(distance: PathLossModel.minimumDistance))
        #expect(model.rssi(distance: 10, gaussian: 0) == -89)
        #expect(model.rssi(distance: 10, gaussian: 1) == -86)
        #expect(model.rssi(distance: 1e9, gaussian: 0) == -127)
        #expect(model.hears(-90) && !model.hears(-91))
        #expect(model.linkHolds(distance: 15) && !model.linkHolds(distance: 20))
    }

    @Test func rssiNoiseIsSeededAndPerBoard() {
        var ward = WardScenario()
        ward.boards = [WardBoard(name: "a", x: 0, y: 0), WardBoard(name: "b", x: 0, y: 0)]
        guard let loop = try? EventLoop() else {
            Issue.record("no event loop")
            return
        }
        let one = Ward(scenario: ward, routes: [1: .standing(x: 5, y: 0)], seed: 3, loop: loop, logger: .discarding)
        let two = Ward(scenario: ward, routes: [1: .standing(x: 5, y: 0)], seed: 3, loop: loop, logger: .discarding)
        let seconds = (0..<200).map(Double.init)
        let a = seconds.map { one.rssi(of: 1, atBoard: 0, at: $0) }
        #expect(a == seconds.map { two.rssi(of: 1, atBoard: 0, at: $0 + 0.5) }, "a pure function of the second")
        #expect(a != seconds.map { one.rssi(of: 1, atBoard: 1, at: $0) }, "each board draws its own noise")
        let mean = a.reduce(0.0) { $0 + Double($1) } / Double(a.count)
        #expect(abs(mean - ward.pathLoss.meanRSSI(distance: 5)) < 1)
        #expect(a.allSatisfy { abs(Double($0) - ward.pathLoss.meanRSSI(distance: 5)) <= 3.46 * 3 + 1 })
        loop.close()
    }

    static let ward = """
        [timing]
        connect_ms = 50

        [ward]
        tx_power_dbm = -60
        path_loss_exponent = 2.5
        noise_db = 0
        floor_dbm = -85
        link_floor_dbm = -92

        [[ward.board]]
        name = "room-1"
        x = 0
        y = 0
        bus = "unix:path=/tmp/one"

        [[ward.board]]
        name = "room-2"
        x = 20
        y = 0

        [[ward.event]]
        board = "room-2"
        at_s = 30
        action = "radio_off"
        duration_s = 10

        [[ward.event]]
        board = "room-1"
        at_s = 5
        action = "power_off"
        duration_s = 2

        [[device]]
        index = 1
        route = [[0, 1, 0], [10, 19, 0]]

        [[device]]
        index = 2
        heart_rate = 70
        route = [{ t = 0, x = 2, y = 3 }]
        """

    @Test func parsesAWard() throws {
        let scenario = try Scenario.parse(Self.ward)
        let ward = try #require(scenario.ward)
        #expect(ward.boards == [WardBoard(name: "room-1", address: "unix:path=/tmp/one", x: 0, y: 0),
                                WardBoard(name: "room-2", x: 20, y: 0)])
        #expect(ward.pathLoss.txPower == -60 && ward.pathLoss.exponent == 2.5 && ward.pathLoss.noise == 0)
        #expect(ward.pathLoss.floor == -85 && ward.pathLoss.linkFloor == -92)
        #expect(ward.events == [WardEvent(at: 5, board: 0, action: .powerOff(seconds: 2)),
                                WardEvent(at: 30, board: 1, action: .radioOff(seconds: 10))])
        let one = try #require(scenario.routes[1])
        let two = try #require(scenario.routes[2])
        #expect(one.position(at: 5) == (10, 0))
        #expect(two.position(at: 5) == (2, 3))
        #expect(scenario.devices[2]?.heartRate == 70)
        #expect(scenario.timing.connectMilliseconds == 50)
        #expect(try Scenario.parse("").ward == nil, "no ward unless the scenario has one")
    }

    @Test(arguments: [
        ("[ward]\n", 1, "[ward] needs at least one [[ward.board]]"),
        ("[ward]\nfloor = 1\n[[ward.board]]\nname = \"a\"\nx = 0\ny = 0\n", 2, "unknown key 'ward.floor'"),
        ("[[ward.board]]\nname = \"a\"\nx = 0\n", 1, "board 'a' needs its position"),
        ("[[ward.board]]\nname = \"a b\"\nx = 0\ny = 0\n", 2, "a board's 'name' is 1 to 32"),
        ("[[ward.board]]\nname = \"a\"\nx = 0\ny = 0\n[[ward.board]]\nname = \"a\"\nx = 1\ny = 0\n", 1,
         "two boards are called 'a'"),
        ("[[ward.board]]\nname = \"a\"\nx = 1e300\ny = 0\n", 3, "'x' must be in"),
        ("[[ward.board]]\nname = \"a\"\nx = 0\ny = 0\n[[ward.event]]\nboard = \"z\"\nat_s = 1\nduration_s = 1\n"
         + "action = \"radio_off\"\n", 6, "no [[ward.board]] is called 'z'"),
        ("[[ward.board]]\nname = \"a\"\nx = 0\ny = 0\n[[ward.event]]\nboard = \"a\"\nat_s = 1\nduration_s = 1\n"
         + "action = \"explode\"\n", 5, "'action' must be radio_off or power_off"),
        ("[[ward.board]]\nname = \"a\"\nx = 0\ny = 0\n[[ward.event]]\nboard = \"a\"\nat_s = 1\n", 5,
         "needs 'at_s', 'board' and 'duration_s'"),
        ("[ward.noise_db]\n", 1, "'noise_db' must be a number"),
        ("[[device]]\nindex = 1\nroute = [[0, 0, 0]]\n", 3, "'route' needs a [ward]"),
        ("[[ward.board]]\nname = \"a\"\nx = 0\ny = 0\n[[device]]\nindex = 1\nroute = [[5, 0, 0], [1, 0, 0]]\n", 7,
         "waypoints must be in time order"),
        ("[[ward.board]]\nname = \"a\"\nx = 0\ny = 0\n[[device]]\nindex = 1\nroute = [[5, 0]]\n", 7,
         "a waypoint is [t, x, y]"),
        ("[[ward.board]]\nname = \"a\"\nx = 0\ny = 0\n[[device]]\nindex = 1\nroute = []\n", 7,
         "'route' must be an array of 1 to 10000"),
        ("[[ward.board]]\nname = \"a\"\nx = 0\ny = 0\n[[device]]\nindex = 1\nroute = [{ t = 0, x = 1 }]\n", 7,
         "a waypoint needs 't', 'x' and 'y'"),
        ("[[ward.board]]\nname = \"a\"\nx = 0\ny = 0\n[[device]]\nindex = 1\nroute = [[\"0\", 0, 0]]\n", 7,
         "'route t' must be a number"),
        ("[[ward.board]]\nname = \"a\"\nx = 0\ny = 0\n[[device]]\nindex = 1\nroute = [[-1, 0, 0]]\n", 7,
         "'route t' must be in"),
    ])
    func rejectsBadWardsWithTheirLine(text: String, line: Int, message: String) {
        #expect {
            _ = try Scenario.parse(text)
        } throws: { error in
            guard let error = error as? ScenarioError else { return false }
            return error.position.line == line && error.message.contains(message)
        }
    }

    @Test func wardCommandLineNamesEachBoardsBus() throws {
        let options = try SimulatorCommand.parse(["--ward", "w.toml", "--bus", "a=unix:path=/tmp/a",
                                                  "--bus=b=unix:path=/tmp/b", "--devices", "6", "--truth", "t"])
            .get()
        #expect(options.wardPath == "w.toml")
        #expect(options.bus == nil)
        #expect(options.boardBuses == [.init(board: "a", address: "unix:path=/tmp/a"),
                                       .init(board: "b", address: "unix:path=/tmp/b")])
        // Without --ward, an address with '=' is still an address.
        let lone = try SimulatorCommand.parse(["--bus", "unix:path=/tmp/a", "--devices", "1"]).get()
        #expect(lone.bus == .address("unix:path=/tmp/a") && lone.boardBuses.isEmpty && lone.wardPath == nil)
    }

    @Test(arguments: [
        (["--ward", "w", "--bus", "unix:path=/x", "--devices", "1"], "with --ward, --bus needs BOARD=ADDRESS"),
        (["--ward", "w", "--bus", "a=", "--devices", "1"], "with --ward, --bus needs BOARD=ADDRESS"),
        (["--ward", "w", "--bus", "a=x", "--bus", "a=y", "--devices", "1"], "--bus gives board 'a' twice"),
        (["--ward", "w", "--devices", "1", "--scenario", "s"], "--ward FILE is the scenario"),
        (["--ward", "w", "--devices", "1", "--system"], "--ward serves one private bus per board"),
        (["--ward", "w", "--devices", "1", "--peripheral", "--adapter", "hci0"], "--ward simulates bluetoothd"),
        (["--ward", "w"], "--devices N is required"),
        (["--ward"], "--ward needs a FILE"),
    ])
    func rejectsInconsistentWardOptions(arguments: [String], message: String) {
        guard case .failure(let error) = SimulatorCommand.parse(arguments) else {
            Issue.record("\(arguments) parsed")
            return
        }
        #expect(error.message.hasPrefix(message), "\(error.message)")
    }

    @Test func eachBoardGetsTheCommandLinesBusElseTheScenarios() throws {
        let ward = try #require(try Scenario.parse(Self.ward).ward)
        var options = SimulatorOptions()
        #expect(throws: SimulatorError.self) { try SimulatorCommand.wardAddresses(ward, options).get() }
        options.boardBuses = [.init(board: "room-2", address: "unix:path=/tmp/two")]
        #expect(try SimulatorCommand.wardAddresses(ward, options).get() == ["unix:path=/tmp/one",
                                                                          "unix:path=/tmp/two"])
        options.boardBuses = [.init(board: "room-2", address: "unix:path=/tmp/one")]
        #expect(throws: SimulatorError.self) { try SimulatorCommand.wardAddresses(ward, options).get() }
        options.boardBuses = [.init(board: "room-3", address: "unix:path=/tmp/three")]
        #expect(throws: SimulatorError.self) { try SimulatorCommand.wardAddresses(ward, options).get() }
    }
}
