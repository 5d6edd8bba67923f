import Consumer
import Testing

/// The consumers with a heart-rate strap on the broker (SPEC §16, §17): `e4-server` offers only E4s unless asked,
/// `watch` shows a strap's HR, last IBI, battery and contact.
@Suite struct HeartRateStrapConsumerTests {
    static let ward: [String: SeenDevice] = [
        "a00101": SeenDevice(allowed: true, profile: "e4"),
        "b00103": SeenDevice(allowed: true, profile: "hrs"),
    ]

    @Test func e4ServerListsOnlyE4sUnlessAsked() {
        var directory = E4Directory()
        directory.seen(Self.ward)
        #expect(directory.status(DeviceState(status: "connected"), board: "pi", serial: "b00103") == nil)
        _ = directory.status(DeviceState(status: "connected"), board: "pi", serial: "a00101")
        var session = E4ProtocolSession()
        #expect(session.handle("device_discover_list", directory: directory).line
                    == "R device_discover_list 1 | A00101 Empatica_E4 allowed")
        #expect(session.handle("device_connect b00103", directory: directory).line
                    == "R device_connect ERR the requested device is not available")

        var all = E4Directory(includesOtherProfiles: true)
        all.seen(Self.ward)
        _ = all.status(DeviceState(status: "connected"), board: "pi", serial: "b00103")
        #expect(session.handle("device_list", directory: all).line == "R device_list 1 | B00103 Empatica_E4")
    }

    @Test func watchShowsAStrapsHeartRateIBIBatteryAndContact() {
        var board = WatchBoard()
        board.handle(.deviceStatus(board: "pi", device: "b00103",
                                   DeviceState(status: "connected", rssi: nil, battery: 0.9)), now: 0)
        board.handle(.data(board: "pi", device: "b00103",
                           DataMessage(stream: .hr, sid: "s1234567", seq: 0, events: [.init(time: 2e9, value: 64)])),
                     now: 1)
        board.handle(.data(board: "pi", device: "b00103",
                           DataMessage(stream: .ibi, sid: "s1234567", seq: 0,
                                       events: [.init(time: 2e9, value: 0.9375)])), now: 1)
        board.handle(.data(board: "pi", device: "b00103",
                           DataMessage(stream: .contact, sid: "s1234567", seq: 0,
                                       events: [.init(time: 2e9, value: 1), .init(time: 2e9 + 5, value: 0)])), now: 1)
        #expect(board.complete)
        #expect(board.rows["b00103"]?.contact == false)
        let line = board.render(now: 2, trace: false).split(separator: "\n")[1]
        #expect(line.hasPrefix("B00103") && line.contains("64.0") && line.contains("0.938") && line.contains("90%"))
    }
}
