import DBus

/// One board of a ward (``Ward``): the hooks where the shared world overrides a lone simulator's radio. Without a
/// ward every hook answers as a lone board would, so `empalink-sim` without `--ward` behaves as before.
extension Simulator {
    /// The board's name (`""` without a ward).
    var boardName: String {
        guard let ward = self.ward, self.boardIndex < ward.scenario.boards.count else { return "" }
        return ward.scenario.boards[self.boardIndex].name
    }

    /// Whether this board hears `device` advertise now (always, without a ward); measures its RSSI here first, so
    /// that a device discovered between radio ticks appears with its RSSI at this board.
    func wardListens(_ device: SimulatedDevice, at now: Double) -> Bool {
        guard let ward = self.ward else { return true }
        device.rssi = self.wardRSSI(ward, device, at: now)
        return ward.hears(device.index, atBoard: self.boardIndex, at: now)
    }

    /// What this adapter of the board measures of `device`: the ward's RSSI plus the adapter's offset.
    func wardRSSI(_ ward: Ward, _ device: SimulatedDevice, at now: Double) -> Int16 {
        let rssi = ward.rssi(of: device.index, atBoard: self.boardIndex, at: now)
        let offset = self.adapter(of: device).rssiOffset
        return offset == 0 ? rssi : Int16(clamping: Int(rssi) + offset)
    }

    /// Whether a `Connect` from this board can reach `device`: in range of this board, not connected to another and
    /// not through another adapter of this one.
    func wardReachable(_ device: SimulatedDevice, at now: Double) -> Bool {
        self.heldElsewhere(device) == nil
            && self.ward?.refusal(of: device.index, atBoard: self.boardIndex, at: now) == nil
    }

    /// Like ``wardReachable(_:at:)`` for a `Connect`, recording a refusal in the ward's truth.
    func wardAccepts(_ device: SimulatedDevice, at now: Double) -> Bool {
        if let holder = self.heldElsewhere(device) {
            self.ward?.refused(device, board: self.boardIndex, reason: "connected via \(holder.name)")
            return false
        }
        guard let ward = self.ward,
              let reason = ward.refusal(of: device.index, atBoard: self.boardIndex, at: now) else { return true }
        ward.refused(device, board: self.boardIndex, reason: reason)
        return false
    }

    /// The link to `device` comes up on this board, if the ward lets it: still reachable, and no other board
    /// connected first (``Ward/claim(_:board:)`` records either way).
    func wardClaims(_ device: SimulatedDevice, at now: Double) -> Bool {
        if let holder = self.heldElsewhere(device) {
            self.ward?.refused(device, board: self.boardIndex, reason: "connected via \(holder.name)")
            return false
        }
        guard let ward = self.ward else { return true }
        if let reason = ward.refusal(of: device.index, atBoard: self.boardIndex, at: now),
           ward.holder(of: device.index) == nil
        {
            ward.refused(device, board: self.boardIndex, reason: reason)
            return false
        }
        return ward.claim(device, board: self.boardIndex)
    }

    /// The radio tick of a board: RSSI from each wristband's distance to this board; a link whose wristband walked
    /// out of range is lost (supervision timeout: both properties false in one signal, the fds hang up).
    func wardRadioTick(_ ward: Ward) {
        let now = self.now
        for device in self.devices {
            device.rssi = self.wardRSSI(ward, device, at: now)
            if device.linkUp && ward.holder(of: device.index) == self.boardIndex
                && !ward.linkHolds(device.index, atBoard: self.boardIndex, at: now)
            {
                self.dropConnection(device, reason: "link loss (out of range)", emit: true)
            }
        }
    }

    /// The board's radio failed (`radio_off`): every link is lost at once; connection attempts time out.
    func radioFailed() {
        for device in self.devices where device.linkUp {
            self.dropConnection(device, reason: "link loss (radio failed)", emit: true)
        }
    }

    /// Starts a session on `device`, numbered after the last one on any board: it is one wristband, whichever
    /// board it streams to.
    func beginBoardSession(_ device: SimulatedDevice) {
        for sibling in self.siblings(of: device) { device.sessions = max(device.sessions, sibling.sessions) }
        if let ward = self.ward { device.sessions = max(device.sessions, ward.sessions[device.index] ?? 0) }
        self.beginSession(device)
        self.ward?.sessions[device.index] = device.sessions
    }

    /// The control methods of a board (none without a ward): `Walk(s DEVICE, d X, d Y, d SECONDS)` — the devices
    /// walk from where they are to (X, Y) in SECONDS, on any board's bus, for the whole ward — and
    /// `RadioOff(d SECONDS)`, this board's radio deaf for SECONDS (as a `radio_off` event).
    func wardControlMethods(text: @escaping (DBusMethodCall, Int) -> String,
                            number: @escaping (DBusMethodCall, Int) -> Double) -> [DBusMethod]
    {
        guard self.ward != nil else { return [] }
        return [
            DBusMethod("Walk", in: "sddd") { [weak self] call in
                guard let self, let ward = self.ward else { return }
                let selector = text(call, 0)
                // One walk per wristband, not per adapter's view of it.
                let targets = self.devices(matching: selector).filter { $0.adapterIndex == 0 }
                guard !targets.isEmpty else {
                    return call.fail(DBusError(name: Simulator.controlErrorPrefix + "InvalidArguments",
                                               message: "no device matches '\(selector)'"))
                }
                let now = self.now
                for device in targets {
                    ward.walk(device, toX: number(call, 1), y: number(call, 2), over: number(call, 3), at: now,
                              board: self.boardIndex)
                }
                call.reply()
            },
            DBusMethod("RadioOff", in: "d") { [weak self] call in
                guard let self, let ward = self.ward else { return }
                ward.apply(WardEvent(at: self.now, board: self.boardIndex,
                                     action: .radioOff(seconds: max(number(call, 0), 0.001))))
                call.reply()
            },
        ]
    }

    /// `Stats` keys of a board: its name.
    func wardStatistics() -> [(String, DBusValue)] {
        guard self.ward != nil else { return [] }
        return [("board", .string(self.boardName))]
    }

    /// `Stats` keys of a wristband on a board: which board holds its link (`""` free), and the distance to this one.
    func wardDeviceStatistics(_ device: SimulatedDevice, at now: Double) -> [(String, DBusValue)] {
        guard let ward = self.ward else { return [] }
        return [
            ("board", .string(ward.holderName(of: device.index))),
            ("distance", .double(ward.distance(of: device.index, toBoard: self.boardIndex, at: now))),
        ]
    }
}
