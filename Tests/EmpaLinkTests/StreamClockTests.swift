import Testing

@testable import EmpaLink

@Suite struct StreamClockTests {
    @Test func firstPacketAnchorsAtArrivalMinusItsDuration() {
        var clock = StreamClock(fs: 64)
        let first = clock.firstSampleTime(count: 11, arrival: 1000.0)
        #expect(first == 1000.0 - 11.0 / 64)
        // The next packet continues the sample clock, whatever its arrival jitter.
        let second = clock.firstSampleTime(count: 11, arrival: 1000.2)
        #expect(second == 1000.0)
        #expect(clock.reanchors == 0)
    }

    @Test func anEarlierArrivalMovesALateAnchorBack() {
        var clock = StreamClock(fs: 64)
        // The first packet was delayed 40 ms; the second arrives with almost no latency.
        _ = clock.firstSampleTime(count: 11, arrival: 1000.040)
        let second = clock.firstSampleTime(count: 11, arrival: 1000.0 + 11.0 / 64 + 0.001)
        #expect(abs(second - (1000.0 + 0.001)) < 1e-9)
        #expect(clock.reanchors == 0)
    }

    @Test func lostPacketsAreSkippedOver() {
        var clock = StreamClock(fs: 32)
        _ = clock.firstSampleTime(count: 6, arrival: 50.0)
        let afterGap = clock.firstSampleTime(count: 6, arrival: 50.6, lostPackets: 2)
        // One packet after the first plus two lost packets: 18 samples after the anchor's second packet start.
        #expect(afterGap == 50.0 + 12.0 / 32)
    }

    @Test func driftBeyondHalfASecondForASecondReanchorsAndIsCounted() {
        var clock = StreamClock(fs: 4)
        _ = clock.firstSampleTime(count: 6, arrival: 10.0)
        // The device paused: the next packets arrive 5 s late without a counter gap. One late packet is not enough
        // (a burst after a stall looks the same at first); lateness that lasts 1 s of arrival time is.
        let late = clock.firstSampleTime(count: 6, arrival: 16.5)
        #expect(late == 10.0)
        #expect(clock.reanchors == 0)
        let next = clock.firstSampleTime(count: 6, arrival: 18.0)
        #expect(next == 16.5)
        #expect(clock.reanchors == 1)
        let after = clock.firstSampleTime(count: 6, arrival: 19.5)
        #expect(after == 18.0)
    }

    @Test func packetsHeldBackByAStallKeepTheirTimesAndTheirOrder() {
        // BVP packets of 11 samples; packet j's first sample is taken at 1000 + j·d and it arrives 5 ms after its
        // last. Packets 20–31 are held back by a 2 s stall and delivered in a burst 1 ms apart.
        let duration = 11.0 / 64
        func truth(_ j: Int) -> Double { 1000 + Double(j) * duration }
        var clock = StreamClock(fs: 64)
        var previous: Double?
        let release = truth(32) + 0.005
        for j in 0..<60 {
            let arrival = (20..<32).contains(j) ? release + 0.001 * Double(j - 20) : truth(j) + duration + 0.005
            let first = clock.firstSampleTime(count: 11, arrival: arrival)
            #expect(abs(first - truth(j)) < 0.006, "packet \(j) stamped \(first - truth(j)) s off")
            if let previous {
                // Never before the end of the previous packet: a consumer's grid would split here.
                #expect(first >= previous + duration - 1e-9, "packet \(j) overlaps the one before")
            }
            previous = first
        }
        #expect(clock.reanchors == 0)
    }

    @Test func restartAnchorsAnew() {
        var clock = StreamClock(fs: 64)
        _ = clock.firstSampleTime(count: 11, arrival: 1.0)
        let restarted = clock.firstSampleTime(count: 11, arrival: 100.0, restart: true)
        #expect(restarted == 100.0 - 11.0 / 64)
        #expect(clock.reanchors == 0)
    }

    @Test func backoffGrowsWithJitterAndStaysBounded() {
        var random = SystemRandomNumberGenerator()
        for failures in 0...40 {
            let delay = Backoff.delay(failures: failures, initial: .seconds(1), maximum: .seconds(60), using: &random)
            let ceiling = min(60.0, failures <= 1 ? 1.0 : Double(1 << min(failures - 1, 20)))
            #expect(delay >= .seconds(1) && delay <= .milliseconds(Int64(ceiling * 1000)))
        }
        // Jitter: ten draws at the same failure count are not all equal.
        let draws = (0..<10).map { _ in
            Backoff.delay(failures: 6, initial: .seconds(1), maximum: .seconds(60), using: &random)
        }
        #expect(Set(draws.map { $0.components.attoseconds / 1_000_000_000_000_000 + $0.components.seconds * 1000 })
                    .count > 1)
    }
}
