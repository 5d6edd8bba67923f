import E4

/// The host of the packet streams: the simulator's central face (``Simulator``) and its peripheral face
/// (``PeripheralSimulator``) share every line that turns physiology into E4 packets and truth rows, and differ only
/// in how a notification leaves (``transmit(_:_:_:)``).
///
/// Streaming after the 3E71 start command: every tick, each stream emits the packets whose samples are due by its
/// sample clock and records the truth.
protocol PacketEmitter: AnyObject {
    /// Truth recorders by device index.
    var truths: [Int: TruthRecorder] { get }
    /// Simulator seconds since start (monotonic).
    var now: Double { get }
    /// The wall-clock time of simulator time `t`.
    func wall(_ t: Double) -> Double
    /// Hands one notification (after faults) to the characteristic's subscribers; called only when it has any.
    func transmit(_ device: SimulatedDevice, _ characteristic: SimulatedCharacteristic, _ bytes: E4PacketBytes)
}

extension PacketEmitter {
    /// Starts a new numbered session on `device` (the start command) and records it in the truth.
    func beginSession(_ device: SimulatedDevice) {
        device.sessions += 1
        let now = self.now
        device.session = StreamSession(number: device.sessions, start: now)
        if device.kind == .hrs {
            device.session?.lastHeartRate = UInt8(clamping: Int(device.physiology.parameters.heartRate.rounded()))
            device.physiology.advanceBeats(through: now)
        }
        _ = device.physiology.drainBeats()
        self.truths[device.index]?.sessions.line(
            "\(device.sessions),\(TruthRecorder.time(self.wall(now))),\(device.addressString)")
    }

    /// Emits everything of `session` that is due by `now`: the four sensor streams, a battery change, the `tags`
    /// (button presses up to now) and the beats of the truth.
    func emitDue(_ device: SimulatedDevice, _ session: inout StreamSession, now: Double, tags: [Double]) {
        if device.kind == .hrs {
            self.emitHeartRate(device, &session, now: now)
            self.emitBatteryChange(device, &session, now: now)
            return
        }
        self.emitBVP(device, &session, now: now)
        self.emitACC(device, &session, now: now)
        self.emitGSR(device, &session, now: now)
        self.emitTemperature(device, &session, now: now)
        self.emitBatteryChange(device, &session, now: now)
        for tag in tags where tag >= session.start {
            self.emitTag(device, session, at: tag)
        }
        let truth = self.truths[device.index]
        for beat in device.physiology.drainBeats() where beat.foot >= session.start {
            truth?.beats.line("\(TruthRecorder.time(self.wall(beat.foot))),"
                + "\(TruthRecorder.time(self.wall(beat.peak))),\(beat.precedingInterval.map { "\($0)" } ?? ""),"
                + "\(session.number)")
        }
    }

    func emitBVP(_ device: SimulatedDevice, _ session: inout StreamSession, now: Double) {
        guard let characteristic = device.characteristic(0x3EA1) else { return }
        let truth = self.truths[device.index]
        while Double(session.bvpNext + E4BVP.samplesPerPacket) <= now * 64 {
            var green = InlineArray<11, Int>(repeating: 0)
            var red = InlineArray<11, Int>(repeating: 0)
            for i in 0..<E4BVP.samplesPerPacket {
                let counts = device.physiology.bvp(index: session.bvpNext + i)
                let origin = session.bvpOrigin ?? counts
                session.bvpOrigin = origin
                green[i] = Int((counts.green - origin.green).rounded())
                red[i] = Int((counts.red - origin.red).rounded())
            }
            var packet = E4PacketBytes()
            let counter = session.bvpEncoder.counter
            session.bvpEncoder.encode(green: &green, red: &red, into: &packet)
            var decoded = E4BVPPacket()
            let ok: Bool
            do {
                _ = try packet.withBytes { (span: RawSpan) throws(E4DecodeError) in
                    try session.bvpDecoder.decode(span, into: &decoded)
                }
                ok = true
            } catch {
                ok = false
            }
            let fate = self.deliver(device, characteristic, packet)
            if let truth, ok {
                for i in 0..<E4BVP.samplesPerPacket {
                    let t = self.wall(Double(session.bvpNext + i) / 64)
                    truth.bvp.line("\(TruthRecorder.time(t)),\(decoded.value[i]),\(decoded.green[i]),"
                        + "\(decoded.red[i]),\(counter),\(session.number),\(fate.rawValue)")
                }
            }
            session.bvpNext += E4BVP.samplesPerPacket
        }
    }

    func emitACC(_ device: SimulatedDevice, _ session: inout StreamSession, now: Double) {
        guard let characteristic = device.characteristic(0x3EA3) else { return }
        let truth = self.truths[device.index]
        while Double(session.accNext + E4ACC.samplesPerPacket) <= now * 32 {
            var x = InlineArray<6, Int8>(repeating: 0)
            var y = InlineArray<6, Int8>(repeating: 0)
            var z = InlineArray<6, Int8>(repeating: 0)
            for i in 0..<E4ACC.samplesPerPacket {
                (x[i], y[i], z[i]) = device.physiology.acc(index: session.accNext + i)
            }
            var packet = E4PacketBytes()
            let counter = session.accCounter
            E4ACC.encode(x: x, y: y, z: z, counter: counter, into: &packet)
            session.accCounter &+= 1
            let fate = self.deliver(device, characteristic, packet)
            if let truth {
                for i in 0..<E4ACC.samplesPerPacket {
                    let t = self.wall(Double(session.accNext + i) / 32)
                    truth.acc.line("\(TruthRecorder.time(t)),\(x[i]),\(y[i]),\(z[i]),\(counter),"
                        + "\(session.number),\(fate.rawValue)")
                }
            }
            session.accNext += E4ACC.samplesPerPacket
        }
    }

    func emitGSR(_ device: SimulatedDevice, _ session: inout StreamSession, now: Double) {
        guard let characteristic = device.characteristic(0x3EA8) else { return }
        let truth = self.truths[device.index]
        while Double(session.gsrNext + E4GSR.samplesPerPacket) <= now * 4 {
            var codes = InlineArray<6, UInt32>(repeating: 0)
            for i in 0..<E4GSR.samplesPerPacket {
                codes[i] = E4GSR.code(microsiemens: device.physiology.eda(index: session.gsrNext + i))
            }
            var packet = E4PacketBytes()
            let counter = session.gsrCounter
            E4GSR.encode(codes: &codes, counter: counter, into: &packet)
            session.gsrCounter &+= 1
            let fate = self.deliver(device, characteristic, packet)
            if let truth {
                for i in 0..<E4GSR.samplesPerPacket {
                    let t = self.wall(Double(session.gsrNext + i) / 4)
                    truth.gsr.line("\(TruthRecorder.time(t)),\(codes[i]),\(E4GSR.microsiemens(code: codes[i])),"
                        + "\(counter),\(session.number),\(fate.rawValue)")
                }
            }
            session.gsrNext += E4GSR.samplesPerPacket
        }
    }

    func emitTemperature(_ device: SimulatedDevice, _ session: inout StreamSession, now: Double) {
        guard let characteristic = device.characteristic(0x3EA6) else { return }
        let truth = self.truths[device.index]
        while Double(session.temperatureNext + E4Temperature.samplesPerPacket) <= now * 4 {
            var raw = InlineArray<8, UInt16>(repeating: 0)
            for i in 0..<E4Temperature.samplesPerPacket {
                raw[i] = E4Temperature.raw(celsius: device.physiology.temperature(index: session.temperatureNext + i))
            }
            var packet = E4PacketBytes()
            let counter = session.temperatureCounter
            E4Temperature.encode(raw: raw, counter: counter, into: &packet)
            session.temperatureCounter &+= 1
            let fate = self.deliver(device, characteristic, packet)
            if let truth {
                for i in 0..<E4Temperature.samplesPerPacket {
                    let t = self.wall(Double(session.temperatureNext + i) / 4)
                    truth.temperature.line("\(TruthRecorder.time(t)),\(raw[i]),\(E4Temperature.celsius(raw: raw[i])),"
                        + "\(counter),\(session.number),\(fate.rawValue)")
                }
            }
            session.temperatureNext += E4Temperature.samplesPerPacket
        }
    }

    func emitBatteryChange(_ device: SimulatedDevice, _ session: inout StreamSession, now: Double) {
        let percent = device.physiology.batteryPercent(at: now)
        if session.lastBattery != percent {
            session.lastBattery = percent
            self.emitBattery(device, session, percent: percent, at: now)
        }
    }

    /// A strap's Heart Rate Measurements (0x2A37, SPEC §16), once a second of simulator time: flags (contact
    /// supported, detected or not; RR present), the 8-bit HR (the mean of the RR intervals carried, else the last;
    /// 0 without contact), and the RR intervals of the beats since the last notification, in 1/1024 s. A beat is
    /// measured only in contact and only when the beat before it was: no interval spans a contact loss.
    func emitHeartRate(_ device: SimulatedDevice, _ session: inout StreamSession, now: Double) {
        guard let characteristic = device.characteristic(0x2A37) else { return }
        let truth = self.truths[device.index]
        while Double(session.heartRateNext) <= now {
            let t = Double(session.heartRateNext)
            session.heartRateNext += 1
            device.physiology.advanceBeats(through: t)
            session.pendingBeats += device.physiology.drainBeats()
            var rr: [UInt16] = []
            var ends: [Double] = []
            while let beat = session.pendingBeats.first, beat.foot <= t {
                session.pendingBeats.removeFirst()
                let measured = !device.physiology.contactLost(at: beat.foot)
                if measured, session.lastBeatMeasured, let interval = beat.precedingInterval, rr.count < 9 {
                    rr.append(UInt16(clamping: Int((interval * 1024).rounded())))
                    ends.append(beat.foot)
                }
                session.lastBeatMeasured = measured
                truth?.beats.line("\(TruthRecorder.time(self.wall(beat.foot))),"
                    + "\(TruthRecorder.time(self.wall(beat.peak))),\(beat.precedingInterval.map { "\($0)" } ?? ""),"
                    + "\(session.number)")
            }
            let contact = !device.physiology.contactLost(at: t)
            if !rr.isEmpty {
                let total = rr.reduce(0) { $0 + Double($1) } / 1024
                session.lastHeartRate = UInt8(clamping: Int((60 * Double(rr.count) / total).rounded()))
            }
            let rate = contact ? session.lastHeartRate : 0
            var flags: UInt8 = contact ? 0x06 : 0x04
            if !rr.isEmpty { flags |= 0x10 }
            let bytes = [flags, rate] + rr.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
            let fate = self.deliver(device, characteristic, E4PacketBytes(bytes))
            guard let truth else { continue }
            truth.hrs.map { $0.line("\(TruthRecorder.time(self.wall(t))),\(rate),\(contact ? 1 : 0),\(rr.count),"
                + "\(session.number),\(fate.rawValue)") }
            for (value, end) in zip(rr, ends) {
                truth.rr?.line("\(TruthRecorder.time(self.wall(end))),\(value),\(Double(value) / 1024),"
                    + "\(session.number),\(fate.rawValue)")
            }
        }
    }

    func emitBattery(_ device: SimulatedDevice, _ session: StreamSession, percent: UInt8, at t: Double) {
        guard let characteristic = device.characteristic(device.kind == .e4 ? 0x3EB3 : 0x2A19) else { return }
        var packet = E4PacketBytes()
        E4Battery.encode(percent: percent, into: &packet)
        let fate = self.deliver(device, characteristic, packet)
        self.truths[device.index]?.battery.line(
            "\(TruthRecorder.time(self.wall(t))),\(percent),\(session.number),\(fate.rawValue)")
    }

    func emitTag(_ device: SimulatedDevice, _ session: StreamSession, at t: Double) {
        guard let characteristic = device.characteristic(0x3EB2) else { return }
        var packet = E4PacketBytes()
        E4Control.encodeTag(into: &packet)
        let fate = self.deliver(device, characteristic, packet)
        self.truths[device.index]?.tags.line("\(TruthRecorder.time(self.wall(t))),\(session.number),\(fate.rawValue)")
    }

    /// Sends one notification to the characteristic's subscribers, after the packet faults.
    func deliver(_ device: SimulatedDevice, _ characteristic: SimulatedCharacteristic, _ packet: E4PacketBytes)
        -> PacketFate
    {
        if device.packetLoss > 0 && device.faultRandom.unit() < device.packetLoss {
            device.lost += 1
            return .lost
        }
        var bytes = packet
        var fate = PacketFate.delivered
        if device.corruption > 0 && device.faultRandom.unit() < device.corruption {
            fate = .corrupted
            device.corrupted += 1
            let all = packet.withUnsafeBytes { Array($0) }
            if device.faultRandom.unit() < 0.5 {
                bytes = E4PacketBytes(all.prefix(1 + Int(device.faultRandom.next() % UInt64(max(all.count - 1, 1)))))
            } else {
                let index = Int(device.faultRandom.next() % UInt64(max(all.count, 1)))
                bytes[index] ^= UInt8(1 + device.faultRandom.next() % 255)
            }
        }
        guard characteristic.hasSubscribers else { return fate }
        characteristic.notifications += 1
        self.transmit(device, characteristic, bytes)
        return fate
    }
}
