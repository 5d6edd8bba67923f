import Testing

@testable import Physio

/// Issue 18 round 20: the run of seconds acquisition waits on (``CandidateRun``).
@Suite struct CandidateRunTests {
    /// Seconds until `run` is taken, feeding `seconds` (nil: no candidate passed that second).
    func secondsToTake(_ seconds: [(bpm: Double, concentration: Double)?]) -> Int? {
        var run = CandidateRun()
        for (index, second) in seconds.enumerated() {
            if let second {
                if run.hold(second.bpm, concentration: second.concentration) { return index + 1 }
            } else {
                run.skip()
            }
        }
        return nil
    }

    @Test func aPulseThatDipsForOneSecondIsNotStartedOver() {
        // A pulse rising 1 bpm a second at concentration 0.4 (below the 4 s bar), one second in the middle without a
        // candidate above the bar: 12 counted seconds take it, at the 13th. Started over at the dip (before round
        // 20), it waited until the 12th second after the dip, the 19th.
        var seconds: [(bpm: Double, concentration: Double)?] = (0..<30).map { (120 + Double($0), 0.4) }
        seconds[6] = nil
        #expect(self.secondsToTake(seconds) == 13)
        // Another peak the best for that second starts the run over, as before: a run that waited through another
        // peak chained bursts of noise at nearby rates into a track (doesNotChainBurstsAtNearbyRatesIntoATrack).
        seconds[6] = (90, 0.5)
        #expect(self.secondsToTake(seconds) == 19)
    }

    @Test func twoSecondsMissedEndTheRun() {
        var seconds: [(bpm: Double, concentration: Double)?] = (0..<30).map { _ in (120, 0.4) }
        seconds[6] = nil
        seconds[7] = nil
        #expect(self.secondsToTake(seconds) == 8 + 12)
        // A one-second run does not wait: a blip is no run.
        var blip: [(bpm: Double, concentration: Double)?] = (0..<30).map { _ in (120, 0.4) }
        blip[1] = nil
        #expect(self.secondsToTake(blip) == 2 + 12)
    }

    @Test func theRunMayNotWanderFartherThanOneStepAcrossAGap() {
        // After the missed second the peak must be within ±5 bpm of where the run was, not ±10.
        var seconds: [(bpm: Double, concentration: Double)?] = (0..<30).map { _ in (120, 0.4) }
        seconds[6] = nil
        for index in 7..<30 { seconds[index] = (128, 0.4) }
        #expect(self.secondsToTake(seconds) == 7 + 12)
    }

    @Test func fourStrongSecondsFromTheStartOrAfterAGap() {
        let strong: [(bpm: Double, concentration: Double)?] = (0..<10).map { _ in (120, 0.6) }
        #expect(self.secondsToTake(strong) == 4)
        // A weak second inside the run: the 4 s rule no longer applies to it (a peak growing through the window is
        // how a noise peak looks off the wrist); persistence still does.
        var weakened: [(bpm: Double, concentration: Double)?] = (0..<20).map { _ in (120, 0.6) }
        weakened[2] = (120, 0.4)
        #expect(self.secondsToTake(weakened) == 12)
        var growing: [(bpm: Double, concentration: Double)?] = (0..<20).map { _ in (120, 0.6) }
        growing[0] = (120, 0.4)
        #expect(self.secondsToTake(growing) == 12)
        // After a gap the strong seconds count afresh, as a run that started there would.
        var resumed: [(bpm: Double, concentration: Double)?] = (0..<20).map { _ in (120, 0.6) }
        resumed[1] = (120, 0.4)
        resumed[3] = nil
        #expect(self.secondsToTake(resumed) == 8)
    }
}
