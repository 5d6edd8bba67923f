#if canImport(Glibc)
import Glibc
#endif

/// Deterministic synthetic physiology for one wristband (a port of `bench/ibi/synth.py`'s ideas to a streaming
/// form): a beat train with respiratory and slow variability, a PPG pulse per beat (systolic wave, dicrotic
/// notch, diastolic wave and run-off to the next foot), motion episodes that corrupt the PPG and show in ACC,
/// EDA with skin-conductance responses, skin-temperature drift, battery drain and button presses.
///
/// Time is simulator seconds since start; sample `index` of a stream sampled at `fs` is at `index / fs`. Every
/// value is a function of the seed, the device and the sample index alone — event lists (beats, episodes,
/// responses, tags) are drawn in order from their own generators and per-sample noise is hashed from the
/// index — so a client that starts streaming later sees the same signal it would have seen had it been
/// streaming all along.
struct PhysiologyModel {
    let parameters: PhysiologyParameters
    private let noiseKey: UInt64
    private var beatRandom: SimRandom
    private var motionRandom: SimRandom
    private var edaRandom: SimRandom
    private var tagRandom: SimRandom
    /// Walking and running episodes have their own generator, so enabling them leaves every other signal as it was.
    private var walkRandom: SimRandom
    private var walks: [MotionEpisode] = []
    private var nextWalkStart: Double
    private var contactRandom: SimRandom
    /// A strap's contact-loss episodes (start, end), and when the next starts.
    private var contactLosses: [(start: Double, end: Double)] = []
    private var nextContactLoss: Double

    /// Beats whose pulse may still be visible, oldest first.
    private var beats: [SimulatedBeat] = []
    private var nextFoot = 0.5
    /// The interval from the last generated beat to ``nextFoot``.
    private var lastInterval: Double?
    /// Beats generated since the last ``drainBeats()``.
    private var freshBeats: [SimulatedBeat] = []
    private var episodes: [MotionEpisode] = []
    private var nextEpisodeStart: Double
    private var responses: [SkinConductanceResponse] = []
    private var nextResponse: Double
    private var nextTag: Double
    private let edaPhase: Double
    private let temperaturePhase: Double

    /// The bi-exponential SCR shape's maximum, so ``SkinConductanceResponse/amplitude`` is the peak height.
    private static let responsePeak: Double = {
        let rise = 0.75, decay = 4.0
        let peakTime = log(decay / rise) / (1 / rise - 1 / decay)
        return exp(-peakTime / decay) - exp(-peakTime / rise)
    }()

    init(seed: UInt64, device: Int, parameters: PhysiologyParameters) {
        self.parameters = parameters
        let d = UInt64(device)
        self.noiseKey = SimRandom.mix(seed ^ SimRandom.mix(d &* 0x1000_0001))
        self.beatRandom = SimRandom(seed: seed, d, 1)
        self.motionRandom = SimRandom(seed: seed, d, 2)
        self.edaRandom = SimRandom(seed: seed, d, 3)
        self.tagRandom = SimRandom(seed: seed, d, 4)
        self.contactRandom = SimRandom(seed: seed, d, 6)
        self.walkRandom = SimRandom(seed: seed, d, 7)
        var phases = SimRandom(seed: seed, d, 5)
        self.edaPhase = phases.uniform(0...(2 * Double.pi))
        self.temperaturePhase = phases.uniform(0...(2 * Double.pi))
        self.nextEpisodeStart = parameters.motionPerHour > 0
            ? self.motionRandom.exponential(mean: 3600 / parameters.motionPerHour) : .infinity
        self.nextWalkStart = parameters.walksPerHour > 0
            ? self.walkRandom.exponential(mean: 3600 / parameters.walksPerHour) : .infinity
        self.nextResponse = parameters.responsesPerMinute > 0
            ? self.edaRandom.exponential(mean: 60 / parameters.responsesPerMinute) : .infinity
        self.nextTag = parameters.tagsPerHour > 0
            ? self.tagRandom.exponential(mean: 3600 / parameters.tagsPerHour) : .infinity
        self.nextContactLoss = parameters.contactLossPerHour > 0
            ? self.contactRandom.exponential(mean: 3600 / parameters.contactLossPerHour) : .infinity
    }

    private func noise(_ stream: UInt64, _ index: Int) -> Double {
        SimRandom.noise(key: self.noiseKey ^ (stream &* 0x2545_F491_4F6C_DD1D), index: index)
    }

    // MARK: Beats and PPG

    private mutating func generateBeats(through time: Double) {
        while self.nextFoot <= time {
            let t = self.nextFoot
            let base = 60 / (self.parameters.heartRate + self.effortBoost(at: t))
            let hrv = self.parameters.variability
            var interval = base * (1 + hrv * sin(2 * .pi * 0.25 * t) + 0.5 * hrv * sin(2 * .pi * 0.05 * t)
                + 0.01 * self.beatRandom.gaussian())
            interval = max(interval, 0.25)
            let beat = SimulatedBeat(foot: t, interval: interval, precedingInterval: self.lastInterval,
                                     amplitude: self.beatRandom.uniform(0.85...1.15))
            self.beats.append(beat)
            self.freshBeats.append(beat)
            self.nextFoot = t + interval
            self.lastInterval = interval
        }
    }

    /// Generates the beat train through simulator time `time` without computing PPG (a heart-rate strap's
    /// physiology: the same beats an E4 of the same seed would show).
    mutating func advanceBeats(through time: Double) {
        self.generateBeats(through: time)
        var drop = 0
        while drop < self.beats.count && self.beats[drop].foot + 2.5 < time { drop += 1 }
        if drop > 32 { self.beats.removeFirst(drop) }
    }

    /// Whether a strap has lost skin contact at simulator time `t` (episodes of 3–12 s, ``PhysiologyParameters/contactLossPerHour``).
    /// Queries must move forward in time.
    mutating func contactLost(at t: Double) -> Bool {
        while self.nextContactLoss <= t + 1 {
            let start = self.nextContactLoss
            let end = start + self.contactRandom.uniform(3...12)
            self.contactLosses.append((start, end))
            self.nextContactLoss = end + self.contactRandom.exponential(
                mean: 3600 / max(self.parameters.contactLossPerHour, 1e-9))
        }
        if let first = self.contactLosses.first, first.end < t - 60 { self.contactLosses.removeFirst() }
        return self.contactLosses.contains { $0.start <= t && t < $0.end }
    }

    /// The beats generated since the last call (for the truth files), in order.
    mutating func drainBeats() -> [SimulatedBeat] {
        defer { self.freshBeats.removeAll(keepingCapacity: true) }
        return self.freshBeats
    }

    /// The PPG (arbitrary units, systolic peaks positive) at BVP sample `index` (64 Hz), motion artefacts
    /// included.
    private mutating func ppg(index: Int) -> Double {
        let t = Double(index) / 64
        self.generateBeats(through: t + 3)
        // Pulses last at most 2.5 s; drop the ones that ended (queries move forward in time).
        var drop = 0
        while drop < self.beats.count && self.beats[drop].foot + 2.5 < t { drop += 1 }
        if drop > 32 { self.beats.removeFirst(drop) }
        var x = 0.0
        for beat in self.beats where beat.foot <= t && t < beat.foot + 2.5 {
            let tau = t - beat.foot
            let s = beat.scale
            let systolic = exp(-((tau - 0.14 * s) / (0.05 * s)) * ((tau - 0.14 * s) / (0.05 * s)))
            let diastolic = 0.4 * exp(-((tau - 0.36 * s) / (0.07 * s)) * ((tau - 0.36 * s) / (0.07 * s)))
            let rise = min(max(tau / (0.12 * s), 0), 1)
            // Diastolic run-off falls steadily until the next foot, so the foot is the trough.
            let runoff = 0.35 * rise * rise * min(max(1 - tau / beat.interval, 0), 1)
            x += (systolic + diastolic + runoff) * beat.amplitude
        }
        x += 0.15 * sin(2 * .pi * 0.2 * t) + 0.01 * self.noise(1, index)
        var value = 80 * x
        if let episode = self.episode(at: t) {
            value += 150 * episode.amplitude * sin(2 * .pi * episode.frequency * t + episode.phase)
                + 60 * episode.amplitude * self.noise(2, index)
        }
        if let walk = self.walk(at: t) {
            // The cadence and its harmonics, each lagging the ACC by its own phase, and broadband wobble.
            let psi = 2 * .pi * walk.frequency * (t - walk.start) + walk.phase
            let size = 80 * walk.artefactRatio * walk.ramp(at: t)
            value += size * (sin(psi + walk.lags.x) + 0.5 * sin(2 * psi + walk.lags.y)
                + 0.25 * sin(3 * psi + walk.lags.z)) + 0.3 * size * self.noise(9, index)
        }
        return value
    }

    /// Green and red photodiode counts at BVP sample `index`: more blood absorbs more light, so the counts fall
    /// at systole (the decoder's inversion makes the peaks positive again).
    mutating func bvp(index: Int) -> (green: Double, red: Double) {
        let p = self.ppg(index: index)
        return (green: 20_000 - p, red: 30_000 - 0.6 * p + 2 * self.noise(3, index))
    }

    // MARK: Motion and ACC

    private mutating func episode(at t: Double) -> MotionEpisode? {
        while self.nextEpisodeStart <= t + 1 {
            let start = self.nextEpisodeStart
            let episode = MotionEpisode(
                start: start, end: start + self.motionRandom.uniform(4...30),
                amplitude: self.motionRandom.uniform(0.1...1.0), frequency: self.motionRandom.uniform(1...3),
                phase: self.motionRandom.uniform(0...(2 * Double.pi)))
            self.episodes.append(episode)
            self.nextEpisodeStart = episode.end + self.motionRandom.exponential(
                mean: 3600 / max(self.parameters.motionPerHour, 1e-9))
        }
        if let first = self.episodes.first, first.end < t - 60 { self.episodes.removeFirst() }
        return self.episodes.last { $0.start <= t && t < $0.end }
    }

    /// Whether the wearer is moving at simulator time `t` (truth for motion gating).
    mutating func isMoving(at t: Double) -> Bool { self.episode(at: t) != nil || self.walk(at: t) != nil }

    /// The walking or running episode at `t`, generating them ahead of the beats (which need the effort 3 s early).
    private mutating func walk(at t: Double) -> MotionEpisode? {
        while self.nextWalkStart <= t + 5 {
            let start = self.nextWalkStart
            let running = self.walkRandom.uniform(0...1) < 0.5
            let walk = MotionEpisode(
                start: start, end: start + self.walkRandom.uniform(60...300),
                amplitude: running ? 1.2 : 0.35,
                frequency: running ? self.walkRandom.uniform(2.4...3.0) : self.walkRandom.uniform(1.5...2.0),
                phase: self.walkRandom.uniform(0...(2 * Double.pi)), kind: running ? .running : .walking,
                artefactRatio: running ? self.walkRandom.uniform(2...3) : self.walkRandom.uniform(0.8...1.2),
                lags: SIMD3(self.walkRandom.uniform(0...(2 * Double.pi)), self.walkRandom.uniform(0...(2 * Double.pi)),
                            self.walkRandom.uniform(0...(2 * Double.pi))))
            self.walks.append(walk)
            self.nextWalkStart = walk.end + self.walkRandom.exponential(
                mean: 3600 / max(self.parameters.walksPerHour, 1e-9))
        }
        // Keep the last finished one: its effort fades for a few minutes after it ends.
        if self.walks.count > 2, self.walks[1].end < t - 300 { self.walks.removeFirst() }
        return self.walks.last { $0.start <= t && t < $0.end }
    }

    /// The walking or running episode at simulator time `t` (truth), if any.
    mutating func walkEpisode(at t: Double) -> MotionEpisode? { self.walk(at: t) }

    /// Heart-rate rise from walking or running at `t`, bpm: toward the effort with a 30 s time constant during an
    /// episode, back with 45 s after it (exact, so the truth is the beats the model generates).
    private mutating func effortBoost(at t: Double) -> Double {
        _ = self.walk(at: t)
        var boost = 0.0
        for walk in self.walks where walk.start <= t {
            let reached = walk.effort * (1 - exp(-(min(t, walk.end) - walk.start) / 30))
            boost += t < walk.end ? reached : reached * exp(-(t - walk.end) / 45)
        }
        return boost
    }

    /// Acceleration in 1/64 g at ACC sample `index` (32 Hz).
    mutating func acc(index: Int) -> (x: Int8, y: Int8, z: Int8) {
        let t = Double(index) / 32
        var x = 8 + 4 * sin(2 * .pi * t / 400) + 0.7 * self.noise(4, index)
        var y = -4 + 0.7 * self.noise(5, index)
        var z = 62 + 0.7 * self.noise(6, index)
        if let walk = self.walk(at: t) {
            let psi = 2 * .pi * walk.frequency * (t - walk.start) + walk.phase
            let g = walk.amplitude * walk.ramp(at: t)
            x += 64 * g * (sin(psi) + 0.3 * sin(2 * psi))
            y += 32 * g * sin(psi + 0.7)
            z += 25 * g * sin(2 * psi + 0.3)
        }
        if let episode = self.episode(at: t) {
            x += 64 * episode.amplitude * sin(2 * .pi * episode.frequency * t + episode.phase)
            y += 32 * episode.amplitude * sin(.pi * episode.frequency * t)
            z += 20 * episode.amplitude * sin(2 * .pi * 1.3 * episode.frequency * t)
        }
        func clamp(_ v: Double) -> Int8 { Int8(min(max(v.rounded(), -128), 127)) }
        return (clamp(x), clamp(y), clamp(z))
    }

    // MARK: EDA, temperature, battery, tags

    /// Skin conductance in µS at GSR sample `index` (4 Hz).
    mutating func eda(index: Int) -> Double {
        let t = Double(index) / 4
        while self.nextResponse <= t {
            self.responses.append(SkinConductanceResponse(onset: self.nextResponse,
                                                          amplitude: self.edaRandom.uniform(0.05...0.8)))
            self.nextResponse += self.edaRandom.exponential(mean: 60 / max(self.parameters.responsesPerMinute, 1e-9))
        }
        if let first = self.responses.first, first.onset < t - 60 { self.responses.removeFirst() }
        var value = self.parameters.edaTonic * (1 + 0.15 * sin(2 * .pi * t / 900 + self.edaPhase))
        for response in self.responses where response.onset <= t {
            let tau = t - response.onset
            value += response.amplitude * (exp(-tau / 4) - exp(-tau / 0.75)) / PhysiologyModel.responsePeak
        }
        return max(value + 0.003 * self.noise(7, index), 0.02)
    }

    /// Skin temperature in °C at temperature sample `index` (4 Hz): the wrist warms up after the band is put on,
    /// then drifts slowly.
    func temperature(index: Int) -> Double {
        let t = Double(index) / 4
        return self.parameters.temperature - 1.5 * exp(-t / 300) + 0.3 * sin(2 * .pi * t / 1800 + self.temperaturePhase)
            + 0.01 * self.noise(8, index)
    }

    /// Battery percent at simulator time `t`.
    func batteryPercent(at t: Double) -> UInt8 {
        let percent = self.parameters.batteryStart - self.parameters.batteryDrainPerHour * t / 3600
        return UInt8(min(max(percent.rounded(.down), 0), 100))
    }

    /// Button presses up to simulator time `t` not returned before.
    mutating func tags(through t: Double) -> [Double] {
        var out: [Double] = []
        while self.nextTag <= t {
            out.append(self.nextTag)
            self.nextTag += self.tagRandom.exponential(mean: 3600 / max(self.parameters.tagsPerHour, 1e-9))
        }
        return out
    }
}
