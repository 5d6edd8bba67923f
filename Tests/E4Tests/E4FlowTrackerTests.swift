import E4
import Testing

@Suite struct E4FlowTrackerTests {
    /// The continuity of `counter` after `last`, or the thrown error.
    private func step(
        _ width: E4CounterWidth, from last: UInt32, to counter: UInt32
    ) -> Result<E4Continuity, E4DecodeError> {
        var tracker = E4FlowTracker(width: width)
        tracker.accept(last)
        do throws(E4DecodeError) {
            return .success(try tracker.classify(counter))
        } catch {
            return .failure(error)
        }
    }

    @Test func firstPacketCountsNoLoss() throws {
        for width in [E4CounterWidth.bits6, .bits16, .bits32] {
            let tracker = E4FlowTracker(width: width)
            #expect(try tracker.classify(12345) == .first)
        }
    }

    @Test func sixBitCounterWrapsAt64AndEveryStepIsForward() {
        #expect(self.step(.bits6, from: 5, to: 6) == .success(.next))
        #expect(self.step(.bits6, from: 63, to: 0) == .success(.next))
        // 62 → (63, 0 lost) → 1.
        #expect(self.step(.bits6, from: 62, to: 1) == .success(.gap(lost: 2)))
        // One behind reads as 62 lost: a 6-bit counter cannot tell.
        #expect(self.step(.bits6, from: 10, to: 9) == .success(.gap(lost: 62)))
        #expect(self.step(.bits6, from: 10, to: 10) == .failure(.duplicate(counter: 10)))
    }

    @Test func sixteenBitCounterWrapsAndSplitsForwardFromBackwardAtHalfRange() {
        #expect(self.step(.bits16, from: 65_535, to: 0) == .success(.next))
        #expect(self.step(.bits16, from: 65_534, to: 2) == .success(.gap(lost: 3)))
        #expect(self.step(.bits16, from: 0, to: 32_767) == .success(.gap(lost: 32_766)))
        #expect(self.step(.bits16, from: 0, to: 32_768) == .success(.restart))
        #expect(self.step(.bits16, from: 1000, to: 999) == .success(.restart))
        #expect(self.step(.bits16, from: 1000, to: 0) == .success(.restart))
        #expect(self.step(.bits16, from: 7, to: 7) == .failure(.duplicate(counter: 7)))
    }

    @Test func thirtyTwoBitCounterWraps() {
        #expect(self.step(.bits32, from: .max, to: 0) == .success(.next))
        #expect(self.step(.bits32, from: .max - 1, to: 3) == .success(.gap(lost: 4)))
        #expect(self.step(.bits32, from: 0, to: 0x7FFF_FFFF) == .success(.gap(lost: 0x7FFF_FFFE)))
        #expect(self.step(.bits32, from: 0, to: 0x8000_0000) == .success(.restart))
    }

    @Test func decodersCountLossesDuplicatesAndRestartsFromCounterSequences() throws {
        var decoder = E4ACCDecoder()
        var packet = E4ACCPacket()
        var bytes = E4PacketBytes()
        let zero = InlineArray<6, Int8>(repeating: 0)
        let sequence: [(UInt16, Result<E4Continuity, E4DecodeError>)] = [
            (65_530, .success(.first)),
            (65_531, .success(.next)),
            (65_531, .failure(.duplicate(counter: 65_531))),
            (1, .success(.gap(lost: 5))),  // 65 532 … 65 535, 0 lost
            (2, .success(.next)),
            (0, .success(.restart)),
            (1, .success(.next)),
        ]
        for (counter, want) in sequence {
            E4ACC.encode(x: zero, y: zero, z: zero, counter: counter, into: &bytes)
            let got: Result<E4Continuity, E4DecodeError> = bytes.withBytes { span in
                do throws(E4DecodeError) {
                    return .success(try decoder.decode(span, into: &packet))
                } catch {
                    return .failure(error)
                }
            }
            #expect(got == want, "counter \(counter)")
        }
        #expect(decoder.statistics.packets == 6)
        #expect(decoder.statistics.lostPackets == 5)
        #expect(decoder.statistics.duplicates == 1)
        #expect(decoder.statistics.restarts == 1)
        #expect(decoder.statistics.decodeErrors == 0)
        decoder.reset()
        E4ACC.encode(x: zero, y: zero, z: zero, counter: 500, into: &bytes)
        let continuity = try bytes.withBytes { (span) throws(E4DecodeError) in
            try decoder.decode(span, into: &packet)
        }
        #expect(continuity == .first)
    }

    @Test func bvpCounterGapAcrossWrap() throws {
        var decoder = E4BVPDecoder()
        var packet = E4BVPPacket()
        var bytes = E4PacketBytes()
        var lost: UInt64 = 0
        var g = inline11([])
        var r = inline11([])
        for counter: UInt8 in [60, 61, 63, 2, 3] {
            E4BVP.encode(green: &g, red: &r, counter: counter, into: &bytes)
            let continuity = try bytes.withBytes { (span) throws(E4DecodeError) in
                try decoder.decode(span, into: &packet)
            }
            if case .gap(let n) = continuity { lost += UInt64(n) }
        }
        // 62 missing, then 0 and 1 missing.
        #expect(lost == 3)
        #expect(decoder.statistics.lostPackets == 3)
    }
}
