import Consumer
import Testing

@Suite struct WatchBoardTests {
    @Test func showsEveryWristbandWithItsLatestValues() {
        var board = WatchBoard()
        board.handle(.deviceStatus(board: "pi", device: "a00101",
                                   DeviceState(status: "connected", rssi: nil, battery: 0.83)), now: 0)
        board.handle(.devices(board: "pi", ["a00103": SeenDevice(rssi: -70, allowed: false)]), now: 0)
        #expect(!board.complete)
        board.handle(.data(board: "pi", device: "a00101",
                           DataMessage(stream: .hr, sid: "s1234567", seq: 0, events: [.init(time: 2e9, value: 71.4)])),
                     now: 10)
        #expect(board.complete)
        board.handle(.metrics(board: "pi", {
            var metrics = BoardMetrics()
            metrics.devices["a00101"] = .init(rxPackets: 99, lost: 1)
            metrics.spoolRecords = 12
            return metrics
        }()), now: 10)
        let text = board.render(now: 11, trace: false)
        let lines = text.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines[1].hasPrefix("A00101"))
        #expect(lines[1].contains("connected") && lines[1].contains("83%") && lines[1].contains("71.4"))
        #expect(lines[1].contains("1.0%") && lines[1].contains("12") && lines[1].contains("1.0s"))
        #expect(lines[2].hasPrefix("A00103") && lines[2].contains("not allowed") && lines[2].contains("-70"))
        #expect(!lines[1].contains("beats"), "a beat-derived rate is shown bare")
    }

    @Test func namesASpectralHeartRate() {
        var board = WatchBoard()
        board.handle(.data(board: "pi", device: "a00101",
                           DataMessage(stream: .hr, sid: "s1234567", seq: 0,
                                       events: [.init(time: 2e9, value: 118.2, confidence: 0.6)], source: "spectral")),
                     now: 10)
        let lines = board.render(now: 11, trace: false).split(separator: "\n")
        #expect(lines[1].contains("118.2(spectral)"), "\(lines[1])")
    }
}
