@testable import Physio
import Testing

/// The published spectral rate's level and trend (``SpectralTrend``) and the engine's use of it.
@Suite struct SpectralTrendTests {
    @Test func carriesARisingRateFromTheWindowsCentreToTheSecondItIsFor() {
        // Values rising 1 bpm a second, as an 8 s window reports them (the rate 4 s before its end): once the trend is
        // learned the value published is the rate 3 s before the window's end (``IBIEngine/heartRateDelay``), ≈ 1 bpm
        // above the value given.
        var trend = SpectralTrend()
        var last = 0.0
        for second in 0..<90 { last = trend.update(100 + Double(second), at: Double(second)) }
        #expect(abs(last - (100 + 89 + 1)) < 0.5, "\(last)")
    }

    @Test func holdsASteadyRateAndStartsOverAfterAHole() {
        var trend = SpectralTrend()
        var values: [Double] = []
        for second in 0..<60 { values.append(trend.update(second % 2 == 0 ? 119 : 121, at: Double(second))) }
        // Alternating ±1 bpm: the published value stays within it, and the trend does not run away.
        #expect(values.allSatisfy { abs($0 - 120) <= 1.01 }, "\(values.suffix(4))")
        // A hole of more than 2 s: the next value is taken as it is.
        #expect(trend.update(150, at: 63) == 150)
        // Nothing outside the estimator's range, whatever the trend.
        var steep = SpectralTrend()
        var top = 0.0
        for second in 0..<40 { top = steep.update(min(200 + 3 * Double(second), 210), at: Double(second)) }
        #expect(top <= Double(SpectralHeartRate.highestBPM))
        #expect(steep.update(.nan, at: 40).isNaN)
    }

    @Test func theEngineFollowsARisingHeartAtTheSecondAValueIsFor() {
        // Walking (96 /min), the heart rising 1 bpm a second from 110 to 150 over 30–70 s: every value spectral.
        // A value is for the second 3 s before its tick (the window's centre is 1 s further back, carried along the
        // trend): on average it is within 2.5 bpm of the rate of that second.
        let rate: (Double) -> Double = { 110 + min(max($0 - 30, 0), 40) }
        let signal = MotionSignal(heartRate: rate, cadence: 1.6, swingG: 0.4, artefactRatio: 1.0)
        var engine = IBIEngine()
        let rising = signal.run(&engine, duration: 80).ticks
            .filter { $0.time >= 45 && $0.time < 70 && $0.sample?.source == .spectral }
        #expect(rising.count >= 20)
        let lag = rising.map { $0.truth - $0.sample!.beatsPerMinute }.reduce(0, +) / Double(max(rising.count, 1))
        #expect(abs(lag) < 2.5, "\(lag) bpm behind the rate now")
    }
}
