#if canImport(Glibc)
import Glibc
#endif
import DBus
import EventLoop
import Foundation
import Logging
import Posix
import Testing
import TestSupport

@testable import Simulator

/// Two boards of one ward, each on its own private bus, and a client on each: the ward's arbitration, radio and
/// truth seen through BlueZ's API as agents on two boards would see them.
final class WardHarness {
    let buses: [TestBus]
    let loop: EventLoop
    let ward: Ward
    let boards: [Simulator]
    let clients: [DBusConnection]
    let truthDirectory: String

    static let device = "/org/bluez/hci0/dev_00_07_80_A0_01_01"
    static let adapter = "/org/bluez/hci0"

    /// - Parameter ward: the `[ward]` and `[[device]]` tables; two boards called `a` and `b` are expected.
    /// - Parameter connectTimeout: `connect_timeout_s`.
    init(_ ward: String, devices: Int = 1, connectTimeout: Double = 0.5) throws {
        var scenario = try Scenario.parse(ward)
        scenario.timing.connectMilliseconds = 50
        scenario.timing.servicesMilliseconds = 20
        scenario.timing.disconnectMilliseconds = 20
        scenario.timing.linkDownMilliseconds = 30
        scenario.timing.connectTimeoutSeconds = connectTimeout
        let wardScenario = try #require(scenario.ward)
        self.buses = [try TestBus(), try TestBus()]
        self.loop = try EventLoop()
        self.truthDirectory = self.buses[0].directory + "/truth"
        var options = SimulatorOptions()
        options.devices = devices
        options.seed = 7
        options.truthDirectory = self.truthDirectory
        let (world, boards, failure) = SimulatorCommand.startWard(
            scenario, ward: wardScenario, addresses: self.buses.map(\.address), options: options, loop: self.loop,
            logger: .discarding)
        self.ward = world
        self.boards = boards
        if let failure { throw failure }
        let loop = self.loop
        self.clients = try self.buses.map { try DBusConnection.connect(address: $0.address, loop: loop) }
    }

    func close() {
        for board in self.boards { board.stop() }
        self.ward.stop()
        for client in self.clients { client.close() }
        self.loop.close()
        for bus in self.buses { bus.stop() }
    }

    @discardableResult
    func wait(limit: Double = 10, _ condition: () -> Bool) -> Bool {
        self.loop.run(until: condition, limit: limit)
    }

    /// Calls a method on board `board`'s bus and runs the loop until the reply.
    func call(_ board: Int, _ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue] = [],
              destination: String = Simulator.busName) -> Result<[DBusValue], DBusError>
    {
        var result: Result<[DBusValue], DBusError>?
        self.clients[board].call(destination: destination, path: path, interface: interface, member: member,
                                 arguments: arguments, timeout: .seconds(10)) { result = $0 }
        self.wait(limit: 15) { result != nil }
        return result ?? .failure(DBusError(name: "test.Timeout", message: "no reply"))
    }

    func device(_ board: Int, _ member: String) -> Result<[DBusValue], DBusError> {
        self.call(board, Self.device, "org.bluez.Device1", member)
    }

    func property(_ board: Int, _ name: String) -> DBusValue? {
        guard case .success(let values) = self.call(board, Self.device, "org.freedesktop.DBus.Properties", "Get",
                                                    [.string("org.bluez.Device1"), .string(name)])
        else { return nil }
        return values.first?.unwrapped
    }

    /// Whether board `board`'s bus has the wristband as a Device1 object.
    func exported(_ board: Int) -> Bool {
        guard case .success(let values) = self.call(board, "/", "org.freedesktop.DBus.ObjectManager",
                                                    "GetManagedObjects"),
              case .dictionary(_, _, let entries)? = values.first else { return false }
        return entries.contains { $0.key.string == Self.device }
    }

    func startDiscovery(_ board: Int) -> Bool {
        if case .success = self.call(board, Self.adapter, "org.bluez.Adapter1", "StartDiscovery") { return true }
        return false
    }

    /// Writes the E4 start command on board `board`.
    func writeStart(_ board: Int) -> Bool {
        let bytes: [UInt8] = [0x01, 0, 0, 0, 0x60]
        let result = self.call(board, Self.device + "/service0020/char0021", "org.bluez.GattCharacteristic1",
                               "WriteValue", [.bytes(bytes), .properties([("type", .string("request"))])])
        if case .success = result { return true }
        return false
    }

    func stats(_ board: Int) -> [String: DBusValue] {
        guard case .success(let values) = self.call(board, Simulator.controlPath, Simulator.controlInterface,
                                                    "Stats", destination: Simulator.controlName),
              let dictionary = values.first?.stringKeyed else { return [:] }
        return dictionary.mapValues(\.unwrapped)
    }

    /// The `board` key of the wristband in board `board`'s `Stats`.
    func holder(seenFrom board: Int) -> String? {
        self.stats(board)["devices"]?.stringKeyed?["a00101"]?.stringKeyed?["board"]?.unwrapped.string
    }

    /// `ward.csv` rows (header dropped) as (board, serial, event, reason).
    func wardRows() -> [(board: String, serial: String, event: String, reason: String)] {
        guard let text = try? String(contentsOfFile: self.truthDirectory + "/ward.csv", encoding: .utf8) else {
            return []
        }
        return text.split(separator: "\n").dropFirst().compactMap { line in
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 6 else { return nil }
            return (fields[2], fields[3], fields[4], fields[5])
        }
    }

    func truthRows(_ file: String) -> [[String]] {
        for board in self.boards { for truth in board.truths.values { truth.flush() } }
        guard let text = try? String(contentsOfFile: self.truthDirectory + "/a00101/" + file, encoding: .utf8)
        else { return [] }
        return text.split(separator: "\n").dropFirst().map { $0.split(separator: ",").map(String.init) }
    }
}

@Suite(.serialized) struct WardTests {
    /// Two boards 10 m apart, the wristband standing between them; no noise.
    static let twoBoards = """
        [ward]
        noise_db = 0

        [[ward.board]]
        name = "a"
        x = 0
        y = 0

        [[ward.board]]
        name = "b"
        x = 10
        y = 0

        [[device]]
        index = 1
        route = [[0, 4, 0]]
        """

    @Test func aWristbandConnectedToOneBoardIsNeitherConnectableNorDiscoverableOnAnother() throws {
        let h = try WardHarness(Self.twoBoards)
        defer { h.close() }
        #expect(h.startDiscovery(0) && h.startDiscovery(1))
        #expect(h.wait { h.exported(0) && h.exported(1) }, "free, it advertises to both boards")
        #expect(h.property(0, "RSSI") == .int16(-59 - 18))  // 4 m: −59 − 30·log10(4) = −77.06
        #expect(h.property(1, "RSSI") == .int16(-59 - 23))  // 6 m: −82.3
        #expect(h.device(0, "Connect").isSuccess)
        #expect(h.holder(seenFrom: 0) == "a" && h.holder(seenFrom: 1) == "a")

        // Board b's Connect finds nobody advertising: bluetoothd's initiator times out.
        let started = MonotonicInstant.now
        let refused = h.device(1, "Connect")
        let waited = started.duration(to: .now)
        guard case .failure(let error) = refused else {
            Issue.record("a second board connected to a connected wristband")
            return
        }
        #expect(error.name == "org.bluez.Error.Failed" && error.message == "le-connection-abort-by-local")
        #expect(waited >= .milliseconds(450), "after the connect timeout, as bluetoothd")
        #expect(h.property(1, "Connected") == .boolean(false))

        // Nor does it advertise to b: removed there, it does not come back while a holds it.
        #expect(h.call(1, WardHarness.adapter, "org.bluez.Adapter1", "RemoveDevice",
                       [.objectPath(WardHarness.device)]).isSuccess)
        h.loop.run(forSeconds: 2.5)
        #expect(!h.exported(1), "a connected E4 does not advertise")
        #expect(h.property(0, "Connected") == .boolean(true))

        // Free again, it advertises to b, which may connect now.
        #expect(h.device(0, "Disconnect").isSuccess)
        #expect(h.wait(limit: 5) { h.exported(1) })
        #expect(h.device(1, "Connect").isSuccess)
        #expect(h.holder(seenFrom: 0) == "b" && h.holder(seenFrom: 1) == "b")
        #expect(h.stats(1)["board"] == .string("b"))

        let rows = h.wardRows().map { "\($0.board) \($0.serial) \($0.event)" }
        #expect(rows == ["a a00101 connect", "b a00101 refused", "a a00101 disconnect", "b a00101 connect"])
        #expect(h.wardRows()[1].reason == "connected to a")
    }

    @Test func twoBoardsConnectingAtOnceGetOneLinkBetweenThem() throws {
        let h = try WardHarness(Self.twoBoards)
        defer { h.close() }
        #expect(h.startDiscovery(0) && h.startDiscovery(1))
        #expect(h.wait { h.exported(0) && h.exported(1) })
        var results: [Int: Result<[DBusValue], DBusError>] = [:]
        for board in 0..<2 {
            h.clients[board].call(destination: Simulator.busName, path: WardHarness.device,
                                  interface: "org.bluez.Device1", member: "Connect", arguments: [],
                                  timeout: .seconds(10)) { results[board] = $0 }
        }
        #expect(h.wait { results.count == 2 })
        let winners = results.filter { $0.value.isSuccess }.map(\.key)
        try #require(winners.count == 1, "exactly one board holds the link: \(results)")
        let winner = winners[0]
        #expect(h.ward.holder(of: 1) == winner)
        #expect(h.boards[1 - winner].devices[0].state == .disconnected)
        let rows = h.wardRows().map { "\($0.board) \($0.event)" }
        let name = winner == 0 ? "a" : "b"
        #expect(rows == ["\(name) connect", "\(winner == 0 ? "b" : "a") refused"])
    }

    @Test func aWaitingConnectSucceedsWhenTheOtherBoardLetsGo() throws {
        let h = try WardHarness(Self.twoBoards, connectTimeout: 3)
        defer { h.close() }
        #expect(h.startDiscovery(0) && h.startDiscovery(1))
        #expect(h.wait { h.exported(0) && h.exported(1) })
        #expect(h.device(0, "Connect").isSuccess)
        var waiting: Result<[DBusValue], DBusError>?
        h.clients[1].call(destination: Simulator.busName, path: WardHarness.device, interface: "org.bluez.Device1",
                          member: "Connect", arguments: [], timeout: .seconds(10)) { waiting = $0 }
        h.loop.run(forSeconds: 0.5)
        #expect(waiting == nil, "b's initiator is still listening")
        // Break before make: a lets go, and b's pending Connect gets the wristband's next advertisement.
        #expect(h.device(0, "Disconnect").isSuccess)
        #expect(h.wait(limit: 3) { waiting != nil })
        #expect(waiting?.isSuccess == true)
        #expect(h.ward.holder(of: 1) == 1)
        let rows = h.wardRows().map { "\($0.board) \($0.event)" }
        #expect(rows == ["a connect", "b refused", "a disconnect", "b connect"])
    }

    @Test func everyBoardSeesTheSamePhysiology() throws {
        let h = try WardHarness(Self.twoBoards)
        defer { h.close() }
        let a = h.boards[0].devices[0]
        let b = h.boards[1].devices[0]
        // Board b asks later and less often: the signal is a function of the sample index, not of the asking.
        let early = (0..<640).map { a.physiology.bvp(index: $0).green }
        let late = stride(from: 0, to: 640, by: 7).map { b.physiology.bvp(index: $0).green }
        #expect(late == stride(from: 0, to: 640, by: 7).map { early[$0] })
        #expect((0..<320).map { a.physiology.acc(index: $0).x } == (0..<320).map { b.physiology.acc(index: $0).x })
        #expect(a.serial == b.serial && a.path == b.path)
    }

    @Test func theControlInterfaceWalksAWristbandAndSilencesABoard() throws {
        let h = try WardHarness(Self.twoBoards)
        defer { h.close() }
        func control(_ board: Int, _ member: String, _ arguments: [DBusValue]) -> Bool {
            h.call(board, Simulator.controlPath, Simulator.controlInterface, member, arguments,
                   destination: Simulator.controlName).isSuccess
        }
        #expect(h.startDiscovery(0) && h.startDiscovery(1))
        #expect(h.wait { h.exported(0) && h.exported(1) })
        #expect(h.device(0, "Connect").isSuccess)
        // Walked away on b's bus: the whole ward's wristband moves, a loses the link.
        #expect(control(1, "Walk", [.string("a00101"), .double(40), .double(0), .double(0)]))
        #expect(h.wait(limit: 3) { h.ward.holder(of: 1) == nil })
        #expect(h.property(0, "Connected") == .boolean(false))
        #expect(!control(1, "Walk", [.string("nobody"), .double(0), .double(0), .double(0)]))
        #expect(control(0, "Walk", [.string("*"), .double(.nan), .double(0), .double(0)]), "NaN is clamped")
        #expect(h.ward.position(of: 1, at: h.ward.now + 1) == (0, 0))
        #expect(control(0, "Walk", [.string("1"), .double(9), .double(0), .double(0)]))
        #expect(h.wait(limit: 3) { h.property(1, "RSSI") == .int16(-59) })
        // b's radio fails: its Connect is refused; a, 9 m away, still connects.
        #expect(control(1, "RadioOff", [.double(5)]))
        #expect(!h.device(1, "Connect").isSuccess)
        #expect(h.device(0, "Connect").isSuccess)
        let rows = h.wardRows().map { "\($0.board) \($0.event)" }
        #expect(rows == ["a connect", "b walk", "a disconnect", "a walk", "a walk", "b radio_off", "b refused",
                         "a connect"])
    }

    @Test func sessionsContinueOnTheNextBoard() throws {
        let h = try WardHarness(Self.twoBoards)
        defer { h.close() }
        #expect(h.startDiscovery(0) && h.startDiscovery(1))
        #expect(h.wait { h.exported(0) && h.exported(1) })
        #expect(h.device(0, "Connect").isSuccess)
        #expect(h.wait { h.boards[0].devices[0].servicesResolved })
        #expect(h.writeStart(0))
        h.loop.run(forSeconds: 0.5)
        #expect(h.device(0, "Disconnect").isSuccess)
        #expect(h.wait(limit: 5) { h.exported(1) && h.ward.holder(of: 1) == nil })
        #expect(h.device(1, "Connect").isSuccess)
        #expect(h.wait { h.boards[1].devices[0].servicesResolved })
        #expect(h.writeStart(1))
        h.loop.run(forSeconds: 0.5)
        let sessions = h.truthRows("sessions.csv").map { $0[0] }
        #expect(sessions == ["1", "2"], "one wristband: its second session is number 2, on whichever board")
        let accSessions = Set(h.truthRows("acc.csv").map { $0[5] })
        #expect(accSessions == ["1", "2"])
    }

    @Test func aWristbandWalkingAwayIsLostThereAndHeardWhereItGoes() throws {
        // It stands 1 m from a, then walks to b (60 m away) between 1.5 s and 3.5 s.
        let h = try WardHarness("""
            [ward]
            noise_db = 0

            [[ward.board]]
            name = "a"
            x = 0
            y = 0

            [[ward.board]]
            name = "b"
            x = 60
            y = 0

            [[device]]
            index = 1
            route = [[0, 1, 0], [1.5, 1, 0], [3.5, 59, 0]]
            """)
        defer { h.close() }
        #expect(h.startDiscovery(0) && h.startDiscovery(1))
        #expect(h.wait { h.exported(0) })
        #expect(h.property(0, "RSSI") == .int16(-59))
        #expect(!h.exported(1), "59 m from b: below the floor, not discovered there")
        #expect(h.device(0, "Connect").isSuccess)
        #expect(h.wait(limit: 6) { h.boards[0].devices[0].state == .disconnected }, "link lost walking away")
        #expect(h.property(0, "Connected") == .boolean(false))
        #expect(h.wait(limit: 5) { h.exported(1) }, "heard at b once there")
        #expect(h.wait(limit: 5) { (h.property(1, "RSSI")?.int64 ?? -127) >= -62 }, "1 m from b at last: −59 dBm")
        let rows = h.wardRows()
        #expect(rows.map(\.event) == ["connect", "disconnect"])
        #expect(rows.last?.reason == "link loss (out of range)")
    }

    @Test func aBoardsRadioFailureDropsItsLinksOnly() throws {
        let h = try WardHarness(Self.twoBoards + """

            [[ward.event]]
            board = "a"
            at_s = 1.5
            action = "radio_off"
            duration_s = 3
            """)
        defer { h.close() }
        #expect(h.startDiscovery(0) && h.startDiscovery(1))
        #expect(h.wait { h.exported(0) && h.exported(1) })
        #expect(h.device(0, "Connect").isSuccess)
        #expect(h.wait(limit: 4) { h.ward.holder(of: 1) == nil }, "the link goes with a's radio")
        #expect(h.property(0, "Connected") == .boolean(false))
        #expect(h.stats(0)["powered"] == .boolean(true), "a hung controller still reads powered")
        // a cannot connect while deaf; b can.
        #expect(!h.device(0, "Connect").isSuccess)
        #expect(h.device(1, "Connect").isSuccess)
        let rows = h.wardRows().map { "\($0.board) \($0.event) \($0.reason)" }
        #expect(rows == ["a connect ", "a radio_off for 3.0 s", "a disconnect link loss (radio failed)",
                         "a refused radio off", "b connect "])
    }
}

extension Result {
    var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}
