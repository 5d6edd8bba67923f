import Agent
import EmpaLink

/// Every device profile's decoders (SPEC §6, §15, §16): the first byte picks the profile (modulo ``profiles``), then
/// each frame is one value for a characteristic: a channel byte (modulo the profile's characteristics; 0xFF resets
/// the decoder, as a reconnection does), a length byte, the value. One decoder sees the whole sequence, so
/// counters, clocks and beat detection carry across values.
enum ProfileFuzz {
    static let target = FuzzTarget(
        name: "profiles",
        summary: "a profile selector, then (channel, length, value) notifications into that profile's decoder"
    ) { bytes in
        var input = FuzzInput(bytes)
        guard let selector = input.byte(), !profiles.isEmpty else { return }
        let profile = profiles[Int(selector) % profiles.count]
        let channels = profile.characteristics.count
        guard channels > 0 else { return }
        let decoder = profile.makeDecoder()
        var sink = CheckingSink()
        var arrival = 1_700_000_000.0
        while let channel = input.byte() {
            if channel == 0xFF {
                decoder.reset()
                continue
            }
            let value = input.take(Int(input.byte() ?? 0))
            decoder.receive(channel: Int(channel) % channels, value, arrival: arrival, into: &sink)
            arrival += Double(channel & 0x0F) / 16
        }
        _ = decoder.statistics
        _ = decoder.reanchors
    }

    /// The profiles the agent registers (``AgentRuntime/profiles``), in its order: a new profile there is fuzzed
    /// with no new target. The E4 stays first, so the seeds (selector 0) stay E4 inputs.
    static let profiles: [any DeviceProfile] = AgentRuntime.profiles
}

/// A sink that checks what any decoder must hand on, whatever the packet said: a sampled block has a positive,
/// finite rate, and the three axes of an acceleration block are equally long. A violation traps: that is the finding.
struct CheckingSink: DecodedStreamSink {
    func samples(_ stream: SampledStream, _ values: UnsafeBufferPointer<Float>, t0: Double, fs: Double) {
        precondition(fs > 0 && fs.isFinite, "\(stream) block with rate \(fs)")
    }

    func acceleration(x: UnsafeBufferPointer<Int8>, y: UnsafeBufferPointer<Int8>, z: UnsafeBufferPointer<Int8>,
                      t0: Double, fs: Double) {
        precondition(x.count == y.count && y.count == z.count, "acceleration axes of \(x.count), \(y.count), \(z.count)")
        precondition(fs > 0 && fs.isFinite, "acceleration block with rate \(fs)")
    }

    func ibi(_ seconds: Float, at time: Double) {}
    func heartRate(_ bpm: Float, at time: Double) {}
    func battery(_ level: Float, at time: Double) {}
    func tag(at time: Double) {}
}
