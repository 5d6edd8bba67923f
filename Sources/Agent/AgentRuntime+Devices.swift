#if canImport(Glibc)
import Glibc
#endif
import EmpaLink

/// Which wristbands to connect, and their status topics.
extension AgentRuntime: EmpaticaDelegate {
    public func didUpdateBLEStatus(_ status: BLEStatus) {
        self.logger.info("Bluetooth \(status.rawValue)", ["BLE_STATUS": status.rawValue])
        self.updateSystemdStatus()
        self.fleetAdaptersChanged()
    }

    /// One journal line per owner change of `org.bluez` (SPEC §12: a peer that changes under a call is not trusted).
    public func didChangeBlueZOwner(from: String, to: String?, abandonedCalls: Int) {
        self.logger.warn("org.bluez changed owner from \(from) to \(to ?? "nobody"): BlueZ's state is reloaded, "
                             + "\(abandonedCalls) call(s) in flight abandoned, a late answer from \(from) is ignored",
                         ["COMPONENT": "bluez"])
    }

    public func didDiscoverDevices(_ devices: [EmpaticaDeviceManager]) {
        self.reconcileConnections()
        self.publishDevices()
    }

    /// Connects whitelisted, allowed wristbands up to `max_connections` per adapter; disconnects ones no longer
    /// whitelisted. Only whitelisted wristbands are ever connected, each through one adapter at a time.
    func reconcileConnections() {
        guard !self.apis.isEmpty, !self.shuttingDown else { return }
        let devices = self.devices
        // A reload's new labels show in the retained status (an unchanged status is not published again).
        for device in self.wristbandDevices where self.publishers[self.topicID(for: device)] != nil {
            self.publishDeviceStatus(device)
        }
        for device in devices where device.isConnectionWanted && !(self.isWhitelisted(device) && device.allowed) {
            let reason = self.isWhitelisted(device) ? "the API key no longer unlocks it" : "no longer whitelisted"
            self.logger.info("disconnecting \(device.serialNumber): \(reason)", ["DEVICE": device.serialNumber])
            device.disconnect()
        }
        // Fleet mode: wristbands are connected only on the coordinator's `.connect`, under a lease (SPEC §18).
        guard self.fleet == nil else {
            for api in self.apis { api.reconcileDiscovery() }
            return
        }
        var slots = ConnectionSlots(adapters: self.configuration.bluetooth.adapters,
                                    capacity: self.configuration.bluetooth.maxConnections)
        var wanted = Set<String>()
        for device in devices where device.isConnectionWanted {
            slots.take(device.adapter, attempting: device.deviceStatus != .connected)
            wanted.insert(self.topicID(for: device))
        }
        let candidates = devices.filter { !$0.isConnectionWanted && self.isWhitelisted($0) }
        var warned = Set<String>()
        for device in candidates.sorted(by: { $0.address < $1.address }) {
            let id = self.topicID(for: device)
            guard !wanted.contains(id) else { continue }
            guard device.allowed else {
                if warned.insert(id).inserted {
                    self.logger.warn("\(device.serialNumber) is whitelisted but the API key does not unlock it",
                                     ["DEVICE": device.serialNumber])
                }
                continue
            }
            // The wristband's objects on every adapter that heard it: the one whose adapter has most room.
            let heard = candidates.filter { self.topicID(for: $0) == id && $0.allowed }
            guard let chosen = slots.choose(heard.map { ($0.adapter, $0.rssi) }).flatMap({ adapter in
                heard.first { $0.adapter == adapter }
            }) else { continue }
            let publisher = self.publisher(for: chosen)
            do {
                try chosen.connect(delegate: publisher)
                slots.take(chosen.adapter, attempting: true)
                wanted.insert(id)
                let on = self.apis.count > 1 ? " on \(chosen.adapter)" : ""
                self.logger.info("connecting \(chosen.serialNumber)\(on)",
                                 ["DEVICE": chosen.serialNumber, "ADAPTER": chosen.adapter])
            } catch {
                self.logger.error("\(chosen.serialNumber): \(error)", ["DEVICE": chosen.serialNumber])
            }
        }
        for api in self.apis { api.reconcileDiscovery() }
    }

    func publisher(for device: EmpaticaDeviceManager) -> DevicePublisher {
        let label = self.wristband(for: device)?.label ?? ""
        if let existing = self.publishers[self.topicID(for: device)] {
            existing.label = label
            return existing
        }
        let publisher = DevicePublisher(host: self, sink: self.outbox, json: self.json, topicBase: self.topicBase,
                                        serial: self.topicID(for: device), label: label)
        self.publishers[self.topicID(for: device)] = publisher
        return publisher
    }

    /// A wristband's connection changed: its retained status topic, systemd's STATUS, and connection slots.
    func deviceStatusChanged(_ device: EmpaticaDeviceManager) {
        self.publishDeviceStatus(device)
        self.updateSystemdStatus()
        self.logger.info("\(device.serialNumber) \(device.deviceStatus.rawValue)",
                         ["DEVICE": device.serialNumber, "STATUS": device.deviceStatus.rawValue])
        if device.deviceStatus == .disconnected || device.deviceStatus == .connected {
            self.reconcileConnections()
        }
        self.fleetDeviceStatusChanged(device)
    }

    /// Publishes the wristband's retained status, unless it is the one last published.
    ///
    /// `since` is when the current status began: for `connected` when the link came up, otherwise when the agent saw
    /// the change. The status repeats only when something in it changed (a battery reading, a reload's label).
    ///
    /// - Parameters:
    ///   - status: what to report instead of the device's own status (shutdown: `disconnected` at once).
    ///   - force: publish even if unchanged (a new broker session, whose retained copy may be gone).
    func publishDeviceStatus(_ device: EmpaticaDeviceManager, overriding status: DeviceStatus? = nil,
                             force: Bool = false) {
        // With several adapters a wristband has several objects: the status is the one that speaks for it.
        let device = self.representative(of: device)
        guard let publisher = self.publishers[self.topicID(for: device)] else { return }
        let status = status ?? device.deviceStatus
        if status != publisher.statusSeen {
            publisher.statusSeen = status
            publisher.statusSince = status == .connected ? device.connectedSince ?? Self.wallClock() : Self.wallClock()
        }
        var members: [(String, String)] = [
            ("status", Self.quote(status.rawValue)),
            ("address", Self.quote(device.address.description)),
            ("label", Self.quote(publisher.label)),
            ("rssi", Self.advertisedRSSI(device, status: status).map(String.init) ?? "null"),
            ("battery", device.batteryLevel.map { Self.number(Double($0), decimals: 2) } ?? "null"),
            ("since", publisher.statusSince.map { Self.number($0, decimals: 3) } ?? "null"),
        ]
        if status == .connected { members.append(("sid", Self.quote(publisher.sid))) }
        members += Self.profileMembers(device)
        let text = Self.object(members)
        guard force || text != publisher.publishedStatus else { return }
        publisher.publishedStatus = text
        self.outbox.publish(topic: self.topicBase + "/" + self.topicID(for: device) + "/status", text: text, retain: true)
    }

    /// The wristband's RSSI as status and metrics report it: the last advertisement's, `nil` while connected.
    ///
    /// A connected E4 stops advertising and bluetoothd does not refresh `RSSI` over a connection, so the value BlueZ
    /// still holds right after connecting is stale; the link's own RSSI (HCI Read RSSI, mgmt Get Connection
    /// Information) needs `CAP_NET_ADMIN`, which the sandboxed agent does not have.
    static func advertisedRSSI(_ device: EmpaticaDeviceManager, status: DeviceStatus? = nil) -> Int? {
        (status ?? device.deviceStatus) == .connected ? nil : device.rssi
    }

    /// Wall-clock time in seconds since 1970.
    static func wallClock() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    func updateSystemdStatus() {
        guard !self.apis.isEmpty else {
            self.notifier.status("waiting for the system bus")
            return
        }
        let connected = Set(self.devices.filter { $0.deviceStatus == .connected }.map(self.topicID(for:))).count
        self.notifier.status("\(connected)/\(self.configuration.wristbands.count) wristbands connected, "
                                 + "Bluetooth \(self.bluetoothStatus.rawValue), MQTT \(self.mqtt.state), "
                                 + "mode \(self.mode.rawValue)")
    }

    /// A device's kind and, where it said, its self-description (SPEC §16): `"profile":"hrs","manufacturer":…`.
    static func profileMembers(_ device: EmpaticaDeviceManager) -> [(String, String)] {
        [("profile", Self.quote(device.profile.name))]
            + device.deviceInformation.fields.map { ($0.key, Self.quote($0.value)) }
    }

    // MARK: Control-plane JSON (small, allocation is fine here)

    static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            default:
                if scalar.value < 0x20 {
                    out += "\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    static func number(_ value: Double, decimals: Int) -> String {
        let buffer = JSONBuffer(capacity: 64)
        buffer.append(value, decimals: decimals)
        return String(decoding: buffer.bytes, as: UTF8.self)
    }

    static func object(_ members: [(String, String)]) -> String {
        "{" + members.map { Self.quote($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
    }
}
