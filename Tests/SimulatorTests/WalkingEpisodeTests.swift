import Glibc
import Testing

@testable import Simulator

/// Walking and running episodes: the cadence shows in ACC and in the PPG, the heart rate rises with the effort, and
/// the signal stays a function of the sample index.
@Suite struct WalkingEpisodeTests {
    func model(seed: UInt64 = 7) -> PhysiologyModel {
        var parameters = PhysiologyParameters()
        parameters.heartRate = 70
        parameters.motionPerHour = 0
        parameters.walksPerHour = 30
        return PhysiologyModel(seed: seed, device: 1, parameters: parameters)
    }

    /// Power of `x` at `hertz` for samples at `rate`, mean removed.
    func power(_ x: [Double], rate: Double, at hertz: Double) -> Double {
        let mean = x.reduce(0, +) / Double(x.count)
        var re = 0.0, im = 0.0
        for (index, value) in x.enumerated() {
            re += (value - mean) * cos(2 * .pi * hertz * Double(index) / rate)
            im += (value - mean) * sin(2 * .pi * hertz * Double(index) / rate)
        }
        return re * re + im * im
    }

    @Test func cadenceShowsInACCAndPPGAndTheHeartSpeedsUp() throws {
        // The first episode of the record: nothing before it raised the heart rate.
        var scout = self.model()
        var first: MotionEpisode?
        for second in 0..<3600 {
            if let walk = scout.walkEpisode(at: Double(second)) {
                first = walk
                break
            }
        }
        let walk = try #require(first)
        try #require(walk.end - walk.start >= 90 && walk.start >= 40, "seed gives \(walk.start)–\(walk.end)")
        var model = self.model()
        let duration = Int(walk.end) + 5
        var green: [Double] = []
        green.reserveCapacity(64 * duration)
        for index in 0..<(64 * duration) { green.append(model.bvp(index: index).green) }
        let beats = model.drainBeats()
        #expect(walk.frequency >= 1.5 && walk.frequency <= 3)
        let from = walk.start + 60, to = walk.start + 90
        let accX = (Int(from * 32)..<Int(to * 32)).map { Double(model.acc(index: $0).x) }
        let restX = (Int((walk.start - 40) * 32)..<Int((walk.start - 10) * 32)).map { Double(model.acc(index: $0).x) }
        #expect(self.power(accX, rate: 32, at: walk.frequency) > 100 * self.power(restX, rate: 32, at: walk.frequency))
        let ppg = Array(green[Int(from * 64)..<Int(to * 64)])
        let ppgRest = Array(green[Int((walk.start - 40) * 64)..<Int((walk.start - 10) * 64)])
        for harmonic in [1.0, 2.0] {
            #expect(self.power(ppg, rate: 64, at: harmonic * walk.frequency)
                > 10 * self.power(ppgRest, rate: 64, at: harmonic * walk.frequency))
        }
        // Heart rate: the mean rate over the last 30 s of the episode against the 30 s before it.
        func rate(_ a: Double, _ b: Double) -> Double {
            let inside = beats.filter { $0.foot >= a && $0.foot < b }
            return 60 / (inside.map(\.interval).reduce(0, +) / Double(inside.count))
        }
        let rise = rate(walk.end - 30, walk.end) - rate(walk.start - 30, walk.start)
        #expect(rise > 0.8 * walk.effort, "rise \(rise) for effort \(walk.effort)")
        #expect(rise < 1.2 * walk.effort + 5)
    }

    @Test func walksComeFromTheirOwnGeneratorAndLeaveTheRestAlone() {
        // Enabling walks changes nothing before the first walk (bar the beats it speeds up) and no ACC outside one.
        var plainParameters = PhysiologyParameters()
        plainParameters.motionPerHour = 20
        var walkingParameters = plainParameters
        walkingParameters.walksPerHour = 30
        var plain = PhysiologyModel(seed: 3, device: 1, parameters: plainParameters)
        var walking = PhysiologyModel(seed: 3, device: 1, parameters: walkingParameters)
        var firstWalk = Double.infinity
        var differing = 0
        for index in 0..<(32 * 1200) {
            let t = Double(index) / 32
            let a = plain.acc(index: index), b = walking.acc(index: index)
            if let walk = walking.walkEpisode(at: t) {
                firstWalk = min(firstWalk, walk.start)
            } else if a != b {
                differing += 1
            }
        }
        #expect(firstWalk < 1200)
        #expect(differing == 0)
        var plainPPG = PhysiologyModel(seed: 3, device: 1, parameters: plainParameters)
        var walkingPPG = PhysiologyModel(seed: 3, device: 1, parameters: walkingParameters)
        let before = Int(max(firstWalk - 4, 0) * 64)
        #expect((0..<before).map { plainPPG.bvp(index: $0).green } == (0..<before).map { walkingPPG.bvp(index: $0).green })
    }
}
