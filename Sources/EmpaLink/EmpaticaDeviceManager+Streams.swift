#if canImport(Glibc)
import Glibc
#endif
import BlueZ
import DBus
import E4
import EventLoop
import Posix

/// Subscribing to the wristband's characteristics and decoding what they send.
extension EmpaticaDeviceManager {
    /// What of the E4 profile BlueZ exports so far
    /// (the lifecycle's ``ConnectionLifecycle/Action/checkProfile(attempt:final:)``).
    ///
    /// bluetoothd 5.66 can signal `ServicesResolved = true` before it has exported every GATT object (their
    /// `InterfacesAdded` follow; seen in the real-BlueZ VM), so a characteristic missing now may still come: the
    /// lifecycle waits for it, and at the attempt's deadline goes on with the streams that are there, or fails when
    /// the command or BVP is missing.
    func checkProfile() -> ConnectionLifecycle.ProfileCheck {
        let characteristics = self.api?.bluez.characteristics(of: self.path) ?? []
        func has(_ uuid: BluetoothUUID) -> Bool { characteristics.contains { BluetoothUUID($0.uuid) == uuid } }
        var missing = E4Stream.allCases.filter { !has($0.characteristic) }.map(\.rawValue)
        let hasCommand = has(E4Profile.commandCharacteristic)
        if !hasCommand { missing.insert("command", at: 0) }
        guard !missing.isEmpty else { return .complete }
        let what = "no characteristic for " + missing.joined(separator: ", ")
        if !hasCommand { return .missingRequired(missing: what, reason: "no command characteristic 3E71") }
        if !has(E4Stream.bvp.characteristic) {
            return .missingRequired(missing: what, reason: "no BVP characteristic 3EA1")
        }
        return .missingOptional(what)
    }

    /// Subscribes to every stream the wristband offers (AcquireNotify, falling back to StartNotify), then tells the
    /// lifecycle (``ConnectionLifecycle/Event/streamsSubscribed(attempt:)``).
    func subscribe(attempt: UInt64) {
        guard let api = self.api else { return }
        let characteristics = api.bluez.characteristics(of: self.path)
        let wanted: [(E4Stream, BlueZCharacteristicInfo)] = E4Stream.allCases.compactMap { stream in
            characteristics.first { BluetoothUUID($0.uuid) == stream.characteristic }.map { (stream, $0) }
        }
        var remaining = wanted.count
        let subscribed: () -> Void = { [weak self] in
            remaining -= 1
            guard let self, remaining == 0 else { return }
            self.handle(.streamsSubscribed(attempt: attempt))
        }
        for (stream, characteristic) in wanted {
            api.bluez.acquireNotify(characteristic: characteristic.path) { [weak self] result in
                guard let self, self.lifecycle.isCurrent(attempt) else {
                    if case .success(let (fd, _)) = result { fd.close() }
                    return
                }
                switch result {
                case .success(let (fd, mtu)):
                    self.counters.acquiredNotifications &+= 1
                    if self.open(stream, fd: fd, mtu: mtu, attempt: attempt) { subscribed() }
                case .failure:
                    // AcquireNotify refused (older BlueZ, another client holds it): notifications as
                    // PropertiesChanged(Value) instead.
                    self.counters.startNotifyFallbacks &+= 1
                    self.valueSubscriptions[characteristic.path] = stream
                    api.bluez.startNotify(characteristic: characteristic.path) { [weak self] result in
                        guard let self, self.lifecycle.isCurrent(attempt) else { return }
                        if case .failure(let error) = result, error.name != BlueZNames.Error.inProgress {
                            self.handle(.stepFailed(attempt: attempt, .bluez(name: error.name, message: error.message)))
                            return
                        }
                        subscribed()
                    }
                }
            }
        }
    }

    /// Watches a stream's notification socket; `false` (and the attempt failed) when it cannot be watched.
    func open(_ stream: E4Stream, fd: FileDescriptor, mtu: Int, attempt: UInt64) -> Bool {
        guard let api = self.api else {
            fd.close()
            return false
        }
        let reader: NotificationStream
        do {
            reader = try NotificationStream(fileDescriptor: fd, mtu: mtu, loop: api.loop)
        } catch {
            let message = "cannot watch notification socket: \(error)"
            self.handle(.stepFailed(attempt: attempt, .bluez(name: BlueZNames.Error.failed, message: message)))
            return false
        }
        reader.onNotification = { [unowned self] bytes in
            self.receive(stream, bytes)
        }
        reader.onClose = { [weak self] _ in
            // BlueZ closes every socket when the link drops; one hang-up is enough to start over.
            self?.handle(.streamClosed)
        }
        self.streams.append(reader)
        return true
    }

    /// Writes the start command (the E4's session start), then tells the lifecycle.
    func writeStart(attempt: UInt64) {
        guard let api = self.api,
              let command = api.bluez.characteristics(of: self.path)
                .first(where: { BluetoothUUID($0.uuid) == E4Profile.commandCharacteristic })?.path
        else {
            self.handle(.stepFailed(attempt: attempt, .profileMismatch("no command characteristic 3E71")))
            return
        }
        var packet = E4PacketBytes()
        E4Command.start(unixTime: UInt32(clamping: Int(Self.now()))).encode(into: &packet)
        let bytes = packet.withUnsafeBytes { Array($0) }
        api.bluez.writeValue(characteristic: command, bytes) { [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let error):
                self.handle(.stepFailed(attempt: attempt, .bluez(name: error.name, message: error.message)))
            case .success:
                self.handle(.sessionStarted(attempt: attempt))
            }
        }
    }

    func readBattery() {
        guard let api = self.api,
              let battery = api.bluez.characteristics(of: self.path)
                .first(where: { BluetoothUUID($0.uuid) == E4Profile.batteryCharacteristic }) else { return }
        api.bluez.readValue(characteristic: battery.path) { [weak self] result in
            guard let self, case .success(let bytes) = result else { return }
            bytes.withUnsafeBytes { self.receive(.battery, $0) }
        }
    }

    func closeStreams(stopNotify: Bool) {
        let open = self.streams
        self.streams = []
        for stream in open {
            stream.onClose = nil
            stream.close()
        }
        if let api = self.api, stopNotify {
            for path in self.valueSubscriptions.keys.sorted() {
                api.bluez.stopNotify(characteristic: path) { _ in }
            }
        }
        self.valueSubscriptions = [:]
    }

    /// A `PropertiesChanged(Value)` notification (StartNotify fallback).
    func characteristicValueChanged(_ path: String) {
        guard let stream = self.valueSubscriptions[path], self.deviceStatus == .connected,
              let value = self.api?.bluez.cache.properties(path, BlueZNames.gattCharacteristic)?["Value"]?.bytes
        else { return }
        value.withUnsafeBytes { self.receive(stream, $0) }
    }

    /// Wall-clock time in seconds since 1970.
    static func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    // MARK: Decoding (the hot path: no allocation)

    func receive(_ stream: E4Stream, _ bytes: UnsafeRawBufferPointer) {
        self.counters.notifications &+= 1
        let arrival = Self.now()
        self.rawTap?(stream, bytes, arrival)
        var sink = DelegateSink(device: self)
        self.decoding.receive(stream, bytes, arrival: arrival, into: &sink)
    }
}

/// Forwards decoded data to the device's delegate.
struct DelegateSink: DecodedStreamSink {
    unowned let device: EmpaticaDeviceManager

    func samples(_ stream: SampledStream, _ values: UnsafeBufferPointer<Float>, t0: Double, fs: Double) {
        self.device.delegate?.didReceiveSamples(stream, values: values, t0: t0, fs: fs, from: self.device)
    }

    func acceleration(x: UnsafeBufferPointer<Int8>, y: UnsafeBufferPointer<Int8>, z: UnsafeBufferPointer<Int8>,
                      t0: Double, fs: Double) {
        self.device.delegate?.didReceiveAccelerationSamples(x: x, y: y, z: z, t0: t0, fs: fs, from: self.device)
    }

    func ibi(_ seconds: Float, at time: Double) {
        self.device.delegate?.didReceiveIBI(seconds, timestamp: time, from: self.device)
    }

    func heartRate(_ bpm: Float, at time: Double) {
        self.device.delegate?.didReceiveHeartRate(bpm, timestamp: time, from: self.device)
    }

    func battery(_ level: Float, at time: Double) {
        self.device.batteryLevel = level
        self.device.delegate?.didReceiveBatteryLevel(level, timestamp: time, from: self.device)
    }

    func tag(at time: Double) {
        self.device.delegate?.didReceiveTag(at: time, from: self.device)
    }
}
