import Consumer
import Testing

@Suite struct StreamOrderTests {
    func message(_ seq: Int, sid: String = "sessionA") -> DataMessage {
        DataMessage(stream: .gsr, sid: sid, seq: seq, start: 1_764_426_000 + Double(seq), rate: 4, samples: [1])
    }

    func delivered(_ outputs: [StreamOrder.Output]) -> [Int] {
        outputs.compactMap { if case .deliver(let m) = $0 { return m.seq } else { return nil } }
    }

    @Test func deliversInOrderAndDropsDuplicates() {
        var order = StreamOrder()
        var seqs: [Int] = []
        var duplicates = 0
        for seq in [5, 6, 6, 7, 5, 8] {
            let outputs = order.accept(self.message(seq), now: 0)
            seqs += self.delivered(outputs)
            duplicates += outputs.filter { if case .duplicate = $0 { return true } else { return false } }.count
        }
        #expect(seqs == [5, 6, 7, 8])
        #expect(duplicates == 2)
    }

    @Test func reordersWithinTheWindow() {
        var order = StreamOrder(window: 2)
        var seqs: [Int] = []
        for seq in [0, 2, 3, 1, 4] { seqs += self.delivered(order.accept(self.message(seq), now: 0)) }
        #expect(seqs == [0, 1, 2, 3, 4])
        #expect(order.flush(now: 10).isEmpty)
    }

    @Test func declaresAGapOnceTheWindowPassesAndDropsLateArrivals() {
        var order = StreamOrder(window: 2)
        _ = order.accept(self.message(0), now: 0)
        #expect(order.accept(self.message(3), now: 1).isEmpty)
        #expect(order.flush(now: 2.5).isEmpty)
        let outputs = order.flush(now: 3.1)
        #expect(outputs.first == .gap(seq: 1, count: 2))
        #expect(self.delivered(outputs) == [3])
        #expect(order.accept(self.message(2), now: 4) == [.duplicate(seq: 2)])
    }

    @Test func aFullBufferDeclaresTheGapAtOnce() {
        var order = StreamOrder(window: 100, capacity: 4)
        _ = order.accept(self.message(0), now: 0)
        var outputs: [StreamOrder.Output] = []
        for seq in 2...5 { outputs += order.accept(self.message(seq), now: 0) }
        #expect(outputs.first == .gap(seq: 1, count: 1))
        #expect(self.delivered(outputs) == [2, 3, 4, 5])
    }

    @Test func coreKeepsSessionsApartAndCountsDrops() {
        var core = ConsumerCore(prefix: "empalink")
        func send(_ payload: String, stream: String = "gsr") -> [ConsumerEvent] {
            core.receive(topic: "empalink/pi/a00101/\(stream)", payload: Array(payload.utf8), now: 0)
        }
        let a = #"{"sid":"sessionA","seq":0,"t":1764426000.0,"fs":4,"v":[1]}"#
        let b = #"{"sid":"sessionB","seq":0,"t":1764426009.0,"fs":4,"v":[2]}"#
        #expect(send(a).count == 1)
        #expect(send(b).count == 1)
        #expect(send(a).isEmpty)
        #expect(send("{not json").isEmpty)
        #expect(send(a, stream: "bvp").isEmpty)  // gsr payload on bvp: wrong rate
        _ = core.receive(topic: "empalink/pi/cmd", payload: Array("{}".utf8), now: 0)
        #expect(core.counters.duplicates == 1)
        #expect(core.counters.malformed == 2)
        #expect(core.counters.ignored == 1)
        #expect(core.subscription == "empalink/+/+/#")
    }
}
