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

    @Test func driftBeyondHalfASecondReanchorsAndIsCounted() {
        var clock = StreamClock(fs: 4)
        _ = clock.firstSampleTime(count: 6, arrival: 10.0)
        // The device paused: the next packet arrives 5 s late without a counter gap.
        let late = clock.firstSampleTime(count: 6, arrival: 16.5)
        #expect(late == 16.5 - 1.5)
        #expect(clock.reanchors == 1)
        let next = clock.firstSampleTime(count: 6, arrival: 18.0)
        #expect(next == 16.5)
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
