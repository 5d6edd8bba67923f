import Consumer
import Testing

@Suite struct E4ProtocolTests {
    func directory(connected: Bool = true) -> E4Directory {
        var directory = E4Directory()
        directory.seen(["a00101": SeenDevice(allowed: true), "a00103": SeenDevice(allowed: false)])
        _ = directory.status(DeviceState(status: connected ? "connected" : "disconnected"), board: "pi",
                             serial: "a00101")
        return directory
    }

    @Test func listsAndBinds() {
        var session = E4ProtocolSession()
        let directory = self.directory()
        #expect(session.handle("server_status\r", directory: directory).line == "R server_status OK")
        #expect(session.handle("device_discover_list", directory: directory).line
                    == "R device_discover_list 2 | A00101 Empatica_E4 allowed | A00103 Empatica_E4 not_allowed")
        #expect(session.handle("  device_list  ", directory: directory).line == "R device_list 1 | A00101 Empatica_E4")
        #expect(session.handle("device_connect_btle a00101 100", directory: directory).line
                    == "R device_connect_btle OK")
        #expect(session.handle("device_connect a00101", directory: directory).line == "R device_connect OK")
        #expect(session.device == "A00101")
        #expect(session.handle("device_subscribe   bvp ON", directory: directory).line == "R device_subscribe bvp OK")
        #expect(session.handle("device_subscribe bvp ON", directory: directory).line == "R device_subscribe bvp OK")
        #expect(session.wants(.bvp, from: "A00101"))
        #expect(session.handle("pause ON", directory: directory).line == "R pause ON")
        #expect(!session.wants(.bvp, from: "A00101"))
        #expect(session.handle("device_subscribe acc ON", directory: directory).line == "R device_subscribe acc OK")
        #expect(session.handle("pause OFF", directory: directory).line == "R pause OFF")
        #expect(session.wants(.acc, from: "A00101"))
        #expect(session.handle("device_subscribe bvp OFF", directory: directory).line == "R device_subscribe bvp OK")
        #expect(!session.wants(.bvp, from: "A00101"))
        let bye = session.handle("device_disconnect", directory: directory)
        #expect(bye == E4ProtocolSession.Reply(line: "R device_disconnect OK", close: true))
    }

    @Test func errorReplies() {
        var session = E4ProtocolSession()
        let directory = self.directory(connected: false)
        #expect(session.handle("device_list", directory: directory).line == "R device_list 0")
        #expect(session.handle("device_connect A00101", directory: directory).line
                    == "R device_connect ERR the requested device is not available")
        #expect(session.handle("device_disconnect", directory: directory).line
                    == "R device_disconnect ERR No connected device.")
        #expect(session.handle("device_subscribe bvp ON", directory: directory).line
                    == "R device_subscribe bvp ERR You are not connected to any device")
        #expect(session.handle("device_connect_btle FFFFFF", directory: directory).line?.hasPrefix(
            "R device_connect_btle ERR") == true)
        #expect(session.handle("device_connect_btle a00103", directory: directory).line?.hasPrefix(
            "R device_connect_btle ERR") == true)
        #expect(session.handle("fly_away now", directory: directory).line == "R fly_away ERR Unknown command")
        #expect(session.handle("   ", directory: directory).line == nil)
        var bound = E4ProtocolSession()
        _ = bound.handle("device_connect a00101", directory: self.directory())
        #expect(bound.handle("device_subscribe xyz ON", directory: directory).line
                    == "R device_subscribe xyz ERR Selected stream is not valid! Available streams: "
                    + "[acc,bat,bvp,gsr,ibi,tag,tmp]")
    }

    @Test func dataLines() {
        let acc = DataMessage(stream: .acc, sid: "s1234567", seq: 0, start: 1764426103.03125, rate: 32,
                              samples: [-3, 12, 62, 1, 2, 3])
        #expect(E4DataLines.text(acc) == "E4_Acc 1764426103.03125 -3 12 62\r\nE4_Acc 1764426103.0625 1 2 3\r\n")
        let bvp = DataMessage(stream: .bvp, sid: "s1234567", seq: 0, start: 1764426103.5, rate: 64,
                              samples: [-12.3456789])
        #expect(E4DataLines.text(bvp) == "E4_Bvp 1764426103.5 -12.34568\r\n")
        #expect(E4DataLines.text(bvp, decimalComma: true) == "E4_Bvp 1764426103,5 -12,34568\r\n")
        let ibi = DataMessage(stream: .ibi, sid: "s1234567", seq: 0, events: [.init(time: 1764426102.734375, value: 0.8)])
        #expect(E4DataLines.text(ibi) == "E4_Hr 1764426102.73438 75\r\nE4_Ibi 1764426102.73438 0.8\r\n")
        let temp = DataMessage(stream: .temp, sid: "s1234567", seq: 0, start: 1764426103, rate: 4, samples: [32.61])
        #expect(E4DataLines.text(temp) == "E4_Temperature 1764426103 32.61\r\n")
    }

    @Test func significantDigits() {
        #expect(DecimalText.significant(0.828125) == "0.828125")
        #expect(DecimalText.significant(1234.56789) == "1234.568")
        #expect(DecimalText.significant(-0.0000001) == "0")
        #expect(DecimalText.significant(64) == "64")
    }
}
