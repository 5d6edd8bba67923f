import E4
import Physio

/// Per-device decoding state: one decoder, one packet buffer and one clock per stream, and the IBI engine.
/// All storage is inline and reused; nothing here allocates per notification.
struct DeviceStreams {
    var bvp = E4BVPDecoder()
    var acc = E4ACCDecoder()
    var gsr = E4GSRDecoder()
    var temperature = E4TemperatureDecoder()
    var battery = E4BatteryDecoder()
    var control = E4ControlDecoder()

    var bvpPacket = E4BVPPacket()
    var accPacket = E4ACCPacket()
    var gsrPacket = E4GSRPacket()
    var temperaturePacket = E4TemperaturePacket()

    var bvpClock = StreamClock(fs: 64)
    var accClock = StreamClock(fs: 32)
    var gsrClock = StreamClock(fs: 4)
    var temperatureClock = StreamClock(fs: 4)

    var ibi = IBIEngine()

    /// Called on every (re)connection: counters restart on the device, so decoders, clocks and the IBI
    /// warm-up start over. Statistics are kept for metrics.
    mutating func reset() {
        self.bvp.reset()
        self.acc.reset()
        self.gsr.reset()
        self.temperature.reset()
        self.bvpClock.reset()
        self.accClock.reset()
        self.gsrClock.reset()
        self.temperatureClock.reset()
        self.ibi.reset()
    }

    /// Totals over every stream, for metrics.
    var statistics: E4StreamStatistics {
        var total = E4StreamStatistics()
        for part in [self.bvp.statistics, self.acc.statistics, self.gsr.statistics, self.temperature.statistics,
                     self.battery.statistics, self.control.statistics] {
            total.packets &+= part.packets
            total.lostPackets &+= part.lostPackets
            total.duplicates &+= part.duplicates
            total.restarts &+= part.restarts
            total.decodeErrors &+= part.decodeErrors
        }
        return total
    }

    /// Clock re-anchors over every stream (SPEC §8), for metrics.
    var reanchors: UInt64 {
        self.bvpClock.reanchors &+ self.accClock.reanchors &+ self.gsrClock.reanchors
            &+ self.temperatureClock.reanchors
    }
}

extension E4Continuity {
    var lostPackets: Int {
        if case .gap(let lost) = self { return lost }
        return 0
    }

    var isRestart: Bool {
        switch self {
        case .first, .restart: return true
        case .next, .gap: return false
        }
    }
}
