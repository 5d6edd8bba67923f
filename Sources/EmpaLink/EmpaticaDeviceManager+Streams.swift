#if canImport(Glibc)
import Glibc
#endif
import Bluetooth
import BlueZ
import DBus
import E4
import EventLoop
import Posix

/// Subscribing to the wristband's characteristics and decoding what they send.
extension EmpaticaDeviceManager {
    /// Finds the E4 characteristics, subscribes to each stream, then writes the start command.
    ///
    /// bluetoothd 5.66 can signal `ServicesResolved = true` before it has exported every GATT object (their
    /// `InterfacesAdded` follow; seen in the real-BlueZ VM), so a characteristic missing now may still come:
    /// the attempt records what is missing and ``objectsChanged()`` calls again. At the attempt's deadline
    /// (`final`) it goes on with the streams that are there, or fails when the command or BVP is missing.
    func subscribe(final: Bool = false) {
        guard let api = self.api else { return }
        let characteristics = api.bluez.characteristics(of: self.path)
        func find(_ uuid: BluetoothUUID) -> BlueZCharacteristicInfo? {
            characteristics.first { $0.uuid == uuid }
        }
        let wanted: [(E4Stream, BlueZCharacteristicInfo)] = E4Stream.allCases.compactMap { stream in
            find(stream.characteristic).map { (stream, $0) }
        }
        let command = find(E4Profile.commandCharacteristic)
        var missing = E4Stream.allCases.filter { stream in !wanted.contains { $0.0 == stream } }.map(\.rawValue)
        if command == nil { missing.insert("command", at: 0) }
        if !missing.isEmpty && !final {
            self.phase = .awaitingProfile(missing: "no characteristic for " + missing.joined(separator: ", "))
            if command != nil, wanted.contains(where: { $0.0 == .bvp }) {
                // Only optional streams missing: go on once no new object has come for a second.
                if let timer = self.profileSettle { api.loop.cancel(timer) }
                let attempt = self.attempt
                self.profileSettle = try? api.loop.scheduleTimer(after: .seconds(1)) { [weak self] in
                    guard let self, self.attempt == attempt, self.deviceStatus == .connecting,
                          self.phase.isAwaitingProfile else { return }
                    self.profileSettle = nil
                    self.subscribe(final: true)
                }
            }
            return
        }
        if let timer = self.profileSettle { api.loop.cancel(timer) }
        self.profileSettle = nil
        self.phase = .subscribing
        guard let command else {
            self.attemptFailed(.profileMismatch("no command characteristic 3E71"))
            return
        }
        guard wanted.contains(where: { $0.0 == .bvp }) else {
            self.attemptFailed(.profileMismatch("no BVP characteristic 3EA1"))
            return
        }
        let attempt = self.attempt
        var remaining = wanted.count
        let subscribed: () -> Void = { [weak self] in
            remaining -= 1
            guard let self, remaining == 0, self.attempt == attempt, self.deviceStatus == .connecting else { return }
            self.writeStart(command.path, attempt: attempt)
        }
        for (stream, characteristic) in wanted {
            api.bluez.acquireNotify(characteristic: characteristic.path) { [weak self] result in
                guard let self, self.attempt == attempt, self.deviceStatus == .connecting else {
                    if case .success(let (fd, _)) = result { fd.close() }
                    return
                }
                switch result {
                case .success(let (fd, mtu)):
                    self.counters.acquiredNotifications &+= 1
                    self.open(stream, fd: fd, mtu: mtu)
                    subscribed()
                case .failure:
                    // AcquireNotify refused (older BlueZ, another client holds it): notifications as
                    // PropertiesChanged(Value) instead.
                    self.counters.startNotifyFallbacks &+= 1
                    self.valueSubscriptions[characteristic.path] = stream
                    api.bluez.startNotify(characteristic: characteristic.path) { [weak self] result in
                        guard let self, self.attempt == attempt, self.deviceStatus == .connecting else { return }
                        if case .failure(let error) = result, error.name != BlueZNames.Error.inProgress {
                            self.attemptFailed(.bluez(name: error.name, message: error.message))
                            return
                        }
                        subscribed()
                    }
                }
            }
        }
    }

    func open(_ stream: E4Stream, fd: FileDescriptor, mtu: Int) {
        guard let api = self.api else {
            fd.close()
            return
        }
        let reader: NotificationStream
        do {
            reader = try NotificationStream(fileDescriptor: fd, mtu: mtu, loop: api.loop)
        } catch {
            self.attemptFailed(.bluez(name: BlueZNames.Error.failed, message: "cannot watch notification socket: \(error)"))
            return
        }
        reader.onNotification = { [unowned self] bytes in
            self.receive(stream, bytes)
        }
        reader.onClose = { [weak self] _ in
            // BlueZ closes every socket when the link drops; one hang-up is enough to start over.
            self?.linkLost()
        }
        self.streams.append(reader)
    }

    func writeStart(_ command: String, attempt: UInt64) {
        guard let api = self.api else { return }
        var packet = E4PacketBytes()
        E4Command.start(unixTime: UInt32(clamping: Int(Self.now()))).encode(into: &packet)
        let bytes = packet.withUnsafeBytes { Array($0) }
        api.bluez.writeValue(characteristic: command, bytes) { [weak self] result in
            guard let self, self.attempt == attempt, self.deviceStatus == .connecting else { return }
            switch result {
            case .failure(let error):
                self.attemptFailed(.bluez(name: error.name, message: error.message))
            case .success:
                self.cancelTimers()
                self.phase = .idle
                self.failures = 0
                self.lastError = nil
                self.connectedSince = Self.now()
                self.decoding.reset()
                self.setStatus(.connected)
                self.readBattery()
                self.api?.reconcileDiscovery()
            }
        }
    }

    func readBattery() {
        guard let api = self.api,
              let battery = api.bluez.characteristics(of: self.path)
                .first(where: { $0.uuid == E4Profile.batteryCharacteristic }) else { return }
        api.bluez.readValue(characteristic: battery.path) { [weak self] result in
            guard let self, case .success(let bytes) = result else { return }
            bytes.withUnsafeBytes { self.receive(.battery, $0) }
        }
    }

    func closeStreams() {
        let open = self.streams
        self.streams = []
        for stream in open {
            stream.onClose = nil
            stream.close()
        }
        if let api = self.api, self.deviceStatus != .disconnected {
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
