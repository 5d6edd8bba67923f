#if canImport(Glibc)
import Glibc
#endif
import Bluetooth
import BlueZ
import Physio
import DBus
import EventLoop
import Posix

/// Subscribing to the device's characteristics, starting its session, and decoding what it sends — all as its
/// ``DeviceProfile`` describes.
extension EmpaticaDeviceManager {
    /// The profile's characteristics BlueZ exports so far, by channel: all of them, those to subscribe, and those
    /// missing.
    func profileCharacteristics() -> (found: [(channel: Int, path: String)], notifying: [(channel: Int, path: String)],
                                      missing: [ProfileCharacteristic]) {
        let present = self.api?.bluez.characteristics(of: self.path) ?? []
        var found: [(channel: Int, path: String)] = []
        var notifying: [(channel: Int, path: String)] = []
        var missing: [ProfileCharacteristic] = []
        for (channel, wanted) in self.channels.enumerated() {
            if let match = present.first(where: { $0.uuid == wanted.uuid }) {
                found.append((channel, match.path))
                if wanted.notifies && Self.offersNotifications(match) { notifying.append((channel, match.path)) }
            } else {
                missing.append(wanted)
            }
        }
        return (found, notifying, missing)
    }

    /// What of the profile BlueZ exports so far (the lifecycle's
    /// ``ConnectionLifecycle/Action/checkProfile(attempt:final:)``).
    ///
    /// bluetoothd 5.66 can signal `ServicesResolved = true` before it has exported every GATT object (their
    /// `InterfacesAdded` follow; seen in the real-BlueZ VM), so a characteristic missing now may still come: the
    /// lifecycle waits for it, and at the attempt's deadline goes on with the characteristics that are there, or
    /// fails when a required one is missing.
    func checkProfile() -> ConnectionLifecycle.ProfileCheck {
        let missing = self.profileCharacteristics().missing
        guard !missing.isEmpty else { return .complete }
        let what = "no characteristic for " + missing.map(\.label).joined(separator: ", ")
        guard let required = missing.first(where: \.isRequired) else { return .missingOptional(what) }
        return .missingRequired(missing: what,
                                reason: "no \(required.label) characteristic \(required.uuid.shortDescription)")
    }

    /// Subscribes to each of the profile's characteristics that notifies (AcquireNotify, falling back to
    /// StartNotify), then tells the lifecycle (``ConnectionLifecycle/Event/streamsSubscribed(attempt:)``).
    func subscribe(attempt: UInt64) {
        guard let api = self.api else { return }
        let notifying = self.profileCharacteristics().notifying
        var remaining = notifying.count
        let subscribed: () -> Void = { [weak self] in
            remaining -= 1
            guard let self, remaining == 0 else { return }
            self.handle(.streamsSubscribed(attempt: attempt))
        }
        guard !notifying.isEmpty else {
            self.handle(.streamsSubscribed(attempt: attempt))
            return
        }
        for (channel, path) in notifying {
            api.bluez.acquireNotify(characteristic: path) { [weak self] result in
                guard let self, self.lifecycle.isCurrent(attempt) else {
                    if case .success(let (fd, _)) = result { fd.close() }
                    return
                }
                switch result {
                case .success(let (fd, mtu)):
                    self.counters.acquiredNotifications &+= 1
                    if self.open(channel, fd: fd, mtu: mtu, attempt: attempt) { subscribed() }
                case .failure(let error):
                    // AcquireNotify refused (older BlueZ, another client holds it): notifications as
                    // PropertiesChanged(Value) instead.
                    self.counters.startNotifyFallbacks &+= 1
                    self.valueSubscriptions[path] = channel
                    let startNotify: () -> Void = { [weak self] in
                        self?.startNotifyFallback(path, attempt: attempt, subscribed: subscribed)
                    }
                    guard error.name == BlueZNames.Error.malformedReply else {
                        startNotify()
                        return
                    }
                    // We refused what BlueZ handed out, but it may still hold the acquisition (and would refuse
                    // StartNotify with "Notify acquired"): StopNotify releases it first, whatever it answers.
                    api.bluez.stopNotify(characteristic: path) { _ in startNotify() }
                }
            }
        }
    }

    /// The `StartNotify` half of the fallback; a failure other than `InProgress` fails the attempt.
    func startNotifyFallback(_ path: String, attempt: UInt64, subscribed: @escaping () -> Void) {
        guard let api = self.api, self.lifecycle.isCurrent(attempt) else { return }
        api.bluez.startNotify(characteristic: path) { [weak self] result in
            guard let self, self.lifecycle.isCurrent(attempt) else { return }
            if case .failure(let error) = result, error.name != BlueZNames.Error.inProgress {
                self.handle(.stepFailed(attempt: attempt, .bluez(name: error.name, message: error.message)))
                return
            }
            subscribed()
        }
    }

    /// Whether a characteristic can be subscribed: its flags offer `notify` or `indicate`, or BlueZ gave no flags
    /// (then trying is the only way to know). A profile's characteristic whose notifications are optional (the
    /// standard Battery Level, SPEC §16) is then read, not subscribed, on a device that does not offer them.
    static func offersNotifications(_ characteristic: BlueZCharacteristicInfo) -> Bool {
        characteristic.flags.isEmpty || characteristic.flags.contains("notify")
            || characteristic.flags.contains("indicate")
    }

    /// Watches a notification socket; `false` (and the attempt failed) when it cannot be watched.
    func open(_ channel: Int, fd: FileDescriptor, mtu: Int, attempt: UInt64) -> Bool {
        guard let api = self.api else {
            fd.close()
            return false
        }
        let reader: NotificationStream
        do {
            reader = try NotificationStream(fileDescriptor: fd, mtu: mtu, loop: api.loop,
                                            readiness: api.notificationReadiness)
        } catch {
            let message = "cannot watch notification socket: \(error)"
            self.handle(.stepFailed(attempt: attempt, .bluez(name: BlueZNames.Error.failed, message: message)))
            return false
        }
        reader.onNotification = { [unowned self] bytes, arrival in
            self.receive(channel, bytes, arrival: arrival)
        }
        reader.onClose = { [weak self] _ in
            // BlueZ closes every socket when the link drops; one hang-up is enough to start over.
            self?.handle(.streamClosed)
        }
        self.configureReads(reader)
        self.streams.append(reader)
        return true
    }

    /// Writes the profile's session start, in order, to the characteristics found (a write to an optional one that
    /// is absent is left out), then tells the lifecycle (``ConnectionLifecycle/Event/sessionStarted(attempt:)``).
    func startSession(attempt: UInt64) {
        let found = self.profileCharacteristics().found
        let writes = self.profile.sessionStart(unixTime: Self.now()).compactMap { write in
            found.first { $0.channel == write.channel }.map { (path: $0.path, write: write) }
        }
        self.writeSessionStart(writes[...], attempt: attempt)
    }

    func writeSessionStart(_ writes: ArraySlice<(path: String, write: ProfileWrite)>, attempt: UInt64) {
        guard let api = self.api else { return }
        guard let next = writes.first else {
            self.handle(.sessionStarted(attempt: attempt))
            return
        }
        api.bluez.writeValue(characteristic: next.path, next.write.bytes, withResponse: next.write.withResponse) {
            [weak self] result in
            guard let self, self.lifecycle.isCurrent(attempt) else { return }
            switch result {
            case .failure(let error):
                self.handle(.stepFailed(attempt: attempt, .bluez(name: error.name, message: error.message)))
            case .success:
                self.writeSessionStart(writes.dropFirst(), attempt: attempt)
            }
        }
    }

    /// Reads the characteristics the profile reads once at the start (the E4's battery) and decodes the values.
    func readAtStart() {
        guard let api = self.api else { return }
        let present = api.bluez.characteristics(of: self.path)
        for (channel, wanted) in self.channels.enumerated() where wanted.readAtStart {
            guard let characteristic = present.first(where: { $0.uuid == wanted.uuid }) else { continue }
            api.bluez.readValue(characteristic: characteristic.path) { [weak self] result in
                guard let self, case .success(let bytes) = result else { return }
                bytes.withUnsafeBytes { self.receive(channel, $0, arrival: Self.now()) }
                if !wanted.notifies { self.delegate?.didUpdateDeviceInformation(for: self) }
            }
        }
    }

    /// Closes the notification streams. While the session is still up (a link loss: BlueZ hung up one socket, or
    /// said the link is gone), each socket is first read to its end: the notifications the kernel queued before the
    /// link went down are data the wristband sent, and with deferred reads (`batch_ms` above 0) up to a batch
    /// interval of them wait in the other sockets when the first hang-up arrives.
    func closeStreams(stopNotify: Bool) {
        let open = self.streams
        self.streams = []
        let sessionUp = self.deviceStatus == .connected
        for stream in open {
            stream.onClose = nil
            if sessionUp { stream.drain() }
            self.retiredReads += Self.statistics(of: stream)
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
        guard let channel = self.valueSubscriptions[path], self.deviceStatus == .connected,
              let value = self.api?.bluez.cache.properties(path, BlueZNames.gattCharacteristic)?["Value"]?.bytes
        else { return }
        // D-Bus gives no kernel time: the notification is stamped when its signal is handled, as it always was.
        value.withUnsafeBytes { self.receive(channel, $0, arrival: Self.now()) }
    }

    /// Wall-clock time in seconds since 1970.
    static func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    // MARK: Decoding (the hot path: no allocation)

    /// One value of the characteristic at `channel` of the profile, which arrived at `arrival` (seconds since 1970:
    /// the kernel's time for a notification socket, the handling time for D-Bus).
    func receive(_ channel: Int, _ bytes: UnsafeRawBufferPointer, arrival: Double) {
        guard self.channels.indices.contains(channel) else { return }
        self.counters.notifications &+= 1
        self.rawTap?(self.channels[channel].uuid, bytes, arrival)
        var sink = DelegateSink(device: self)
        self.decoder.receive(channel: channel, bytes, arrival: arrival, into: &sink)
    }
}

/// Forwards decoded data to the device's delegate.
struct DelegateSink: DecodedStreamSink {
    unowned let device: EmpaticaDeviceManager

    func samples(_ stream: SampledStream, _ values: UnsafeBufferPointer<Float>, t0: Double, fs: Double) {
        self.device.delegate?.didReceiveSamples(stream, values: values, t0: t0, fs: fs, from: self.device)
    }

    func bvp(raw: UnsafeBufferPointer<Float>, filtered: UnsafeBufferPointer<Float>, t0: Double, fs: Double) {
        self.device.delegate?.didReceiveBVPSamples(raw: raw, filtered: filtered, t0: t0, fs: fs, from: self.device)
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

    func heartRate(_ bpm: Float, confidence: Float, source: HeartRateSource, at time: Double) {
        self.device.delegate?.didReceiveHeartRate(bpm, confidence: confidence, source: source, timestamp: time,
                                                  from: self.device)
    }

    func battery(_ level: Float, at time: Double) {
        self.device.batteryLevel = level
        self.device.delegate?.didReceiveBatteryLevel(level, timestamp: time, from: self.device)
    }

    func tag(at time: Double) {
        self.device.delegate?.didReceiveTag(at: time, from: self.device)
    }

    func contact(_ detected: Bool, at time: Double) {
        self.device.delegate?.didReceiveContact(detected, timestamp: time, from: self.device)
    }
}
