import Testing

@testable import Simulator

/// The synthetic physiology: deterministic from the seed, independent of when streaming starts, and shaped
/// as configured.
@Suite struct PhysiologyTests {
    func model(seed: UInt64 = 3, heartRate: Double = 72, motion: Double = 0) -> PhysiologyModel {
        var parameters = PhysiologyParameters()
        parameters.heartRate = heartRate
        parameters.motionPerHour = motion
        return PhysiologyModel(seed: seed, device: 1, parameters: parameters)
    }

    @Test func sameSeedSameSignalAndOtherSeedsDiffer() {
        var a = self.model()
        var b = self.model()
        var c = self.model(seed: 4)
        let first = (0..<640).map { a.bvp(index: $0).green }
        #expect(first == (0..<640).map { b.bvp(index: $0).green })
        #expect(first != (0..<640).map { c.bvp(index: $0).green })
    }

    @Test func aLateStartSeesTheSameSamples() {
        var early = self.model(motion: 60)
        var late = self.model(motion: 60)
        let all = (0..<(64 * 120)).map { early.bvp(index: $0).green }
        let tail = ((64 * 100)..<(64 * 120)).map { late.bvp(index: $0).green }
        #expect(Array(all.suffix(64 * 20)) == tail)
        #expect((0..<100).map { early.acc(index: 3200 + $0).x } == (0..<100).map { late.acc(index: 3200 + $0).x })
    }

    @Test(arguments: [45.0, 72.0, 120.0, 180.0])
    func beatsFollowTheConfiguredHeartRate(bpm: Double) {
        var model = self.model(heartRate: bpm)
        for index in 0..<(64 * 60) { _ = model.bvp(index: index) }
        let beats = model.drainBeats().filter { $0.foot < 60 }
        let meanInterval = zip(beats.dropFirst(), beats).map { $0.foot - $1.foot }.reduce(0, +)
            / Double(beats.count - 1)
        #expect(abs(60 / meanInterval - bpm) < bpm * 0.03)
        #expect(beats.allSatisfy { $0.peak > $0.foot && $0.peak - $0.foot < 0.3 })
    }

    @Test func systolicPeaksAreMaximaOfThePPG() {
        var model = self.model(heartRate: 60)
        let green = (0..<(64 * 20)).map { model.bvp(index: $0).green }
        let beats = model.drainBeats().filter { $0.foot > 2 && $0.foot < 18 }
        for beat in beats {
            // Green falls at systole: the minimum of green between foot and next foot is near the peak.
            let start = Int(beat.foot * 64)
            let end = Int((beat.foot + beat.interval) * 64)
            let window = green[start..<end]
            let minimum = window.indices.min { green[$0] < green[$1] } ?? start
            #expect(abs(Double(minimum) / 64 - beat.peak) < 0.06, "beat at \(beat.foot)")
        }
    }

    @Test func motionEpisodesShowInACC() {
        var parameters = PhysiologyParameters()
        parameters.motionPerHour = 600
        var model = PhysiologyModel(seed: 9, device: 2, parameters: parameters)
        var moving = 0
        var still = 0
        var movingSpread = 0.0
        var stillSpread = 0.0
        for index in 0..<(32 * 600) {
            let x = Double(model.acc(index: index).x)
            if model.isMoving(at: Double(index) / 32) {
                moving += 1
                movingSpread += abs(x - 8)
            } else {
                still += 1
                stillSpread += abs(x - 8)
            }
        }
        #expect(moving > 0 && still > 0)
        #expect(movingSpread / Double(moving) > 4 * stillSpread / Double(still))
    }

    @Test func edaTemperatureAndBatteryStayPlausible() {
        var model = self.model()
        let eda = (0..<2400).map { model.eda(index: $0) }
        #expect(eda.allSatisfy { $0 > 0 && $0 < 30 })
        let temperature = (0..<2400).map { model.temperature(index: $0) }
        #expect(temperature.allSatisfy { 28...38 ~= $0 })
        #expect(temperature.last! > temperature.first!)
        #expect(model.batteryPercent(at: 0) >= model.batteryPercent(at: 3600))
    }
}

/// The scenario file and the command line.
@Suite struct ScenarioAndCommandLineTests {
    @Test func parsesEveryTable() throws {
        let scenario = try Scenario.parse("""
            [timing]
            connect_ms = 200
            temporary_timeout_s = 12.5
            link_down_ms = 50

            [bluetoothd]
            mtu = 185
            connected_signal = false
            scan_restart_s = 0

            [physiology]
            heart_rate_min = 60
            heart_rate_max = 70
            motion_per_hour = 0

            [[device]]
            index = 2
            heart_rate = 150

            [[fault]]
            at_s = 30
            action = "out_of_range"
            device = "a00101"
            duration_s = 10

            [[fault]]
            at_s = 5
            action = "error"
            method = "Connect"
            error = "org.bluez.Error.Failed"
            message = "le-connection-abort-by-local"
            count = 2
            """)
        #expect(scenario.timing.connectMilliseconds == 200)
        #expect(scenario.timing.temporaryTimeoutSeconds == 12.5)
        #expect(scenario.timing.linkDownMilliseconds == 50)
        #expect(scenario.bluetoothd.attMTU == 185)
        #expect(!scenario.bluetoothd.signalsConnected)
        #expect(scenario.bluetoothd.scanRestartSeconds == 0)
        // What bluetoothd 5.66 did in the VM is the default, but for the Connected signal of real radios.
        #expect(Scenario().bluetoothd == BluetoothdBehaviour())
        #expect(Scenario().bluetoothd.attMTU == 517 && Scenario().bluetoothd.signalsConnected)
        #expect(scenario.heartRateRange == 60...70)
        #expect(scenario.devices[2]?.heartRate == 150)
        #expect(scenario.devices[2]?.motionPerHour == 0)
        #expect(scenario.explicitHeartRates == [2])
        #expect(scenario.faults.map(\.at) == [5, 30])
        #expect(scenario.faults[1].action == .outOfRange(device: "a00101", seconds: 10))
    }

    @Test(arguments: [
        ("[timing]\nconect_ms = 1\n", 2, "unknown key 'timing.conect_ms'"),
        ("[physiology]\nheart_rate = 300\n", 2, "'heart_rate' must be in 45.0…180.0"),
        ("[[fault]]\nat_s = 1\naction = \"explode\"\n", 1, "'action' must be one of"),
        ("[weather]\n", 1, "unknown table 'weather'"),
        ("[timing]\ntick_ms = \"fast\"\n", 2, "'tick_ms' must be an integer, found string"),
        ("[bluetoothd]\nmtu = 22\n", 2, "'mtu' must be in 23…517"),
        ("[bluetoothd]\nconnected_signal = 1\n", 2, "'connected_signal' must be true or false"),
        ("[bluetoothd]\nmtu_size = 1\n", 2, "unknown key 'bluetoothd.mtu_size'"),
    ])
    func rejectsMistakesWithTheirLine(text: String, line: Int, message: String) {
        #expect {
            _ = try Scenario.parse(text)
        } throws: { error in
            guard let error = error as? ScenarioError else { return false }
            return error.position.line == line && error.message.contains(message)
        }
    }

    @Test func commandLine() {
        let good = SimulatorCommand.parse(["--bus", "unix:path=/tmp/b", "--devices", "3", "--seed=5", "--truth", "/t"])
        guard case .success(let options) = good else {
            Issue.record("parse failed: \(good)")
            return
        }
        #expect(options.bus == .address("unix:path=/tmp/b"))
        #expect(options.devices == 3)
        #expect(options.seed == 5)
        #expect(options.truthDirectory == "/t")
        for bad in [["--devices", "2"], ["--system"], ["--system", "--devices", "0"], ["--session", "--devices", "x"],
                    ["--system", "--devices", "1", "--frobnicate"],
                    ["--system", "--devices", "1", "--log-level", "loud"]] {
            guard case .failure = SimulatorCommand.parse(bad) else {
                Issue.record("accepted \(bad)")
                continue
            }
        }
    }

    @Test func deviceIdentitiesAreStable() {
        let device = SimulatedDevice(index: 12, seed: 1, physiology: PhysiologyParameters())
        #expect(device.addressString == "00:07:80:A0:01:0C")
        #expect(device.serial == "a0010c")
        #expect(device.path == "/org/bluez/hci0/dev_00_07_80_A0_01_0C")
        #expect(device.name == "Empatica E4")
    }
}
