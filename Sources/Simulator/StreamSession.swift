import E4

/// The sample clocks and encoder state of one streaming session (from a start command to the disconnect).
///
/// Each stream's clock counts samples on the simulator's global grid (`index / fs` seconds after start), so the
/// rate is exact over any period and packets leave when their last sample is due.
struct StreamSession {
    let number: Int
    /// Simulator time of the start command.
    let start: Double
    var bvpNext: Int
    var accNext: Int
    var gsrNext: Int
    var temperatureNext: Int
    var bvpEncoder = E4BVPEncoder()
    /// What a decoder reset at connect reconstructs from the packets as sent (before faults): the truth.
    var bvpDecoder = E4BVPDecoder()
    var bvpOrigin: (green: Double, red: Double)?
    var accCounter: UInt16 = 0
    var gsrCounter: UInt16 = 0
    var temperatureCounter: UInt32 = 0
    var lastBattery: UInt8?
    /// A strap's next notification, in whole simulator seconds (it notifies once a second).
    var heartRateNext: Int
    /// A strap's beats not yet notified, and whether the last beat was measured (in contact).
    var pendingBeats: [SimulatedBeat] = []
    var lastBeatMeasured = false
    var lastHeartRate: UInt8 = 0

    init(number: Int, start: Double) {
        self.number = number
        self.start = start
        self.bvpNext = Int((start * 64).rounded(.up))
        self.accNext = Int((start * 32).rounded(.up))
        self.gsrNext = Int((start * 4).rounded(.up))
        self.temperatureNext = Int((start * 4).rounded(.up))
        self.heartRateNext = Int(start.rounded(.up)) + 1
    }
}
