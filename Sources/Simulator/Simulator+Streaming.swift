#if canImport(Glibc)
import Glibc
#endif
import DBus
import E4

/// Streaming after the 3E71 start command (the shared part is ``PacketEmitter``): notifications leave to the
/// acquired fd and/or as `PropertiesChanged(Value)`, as bluetoothd sends them.
extension Simulator: PacketEmitter {
    func startStreaming(_ device: SimulatedDevice) {
        self.beginSession(device)
    }

    /// The streaming tick: every device with a session emits what is due.
    func streamTick() {
        let now = self.now
        for device in self.devices {
            let tags = device.physiology.tags(through: now)
            // A strap streams once its services are resolved: there is no start command.
            if device.kind == .hrs, device.state == .connected, device.servicesResolved, device.session == nil {
                self.beginSession(device)
            }
            guard device.state == .connected, var session = device.session else { continue }
            self.emitDue(device, &session, now: now, tags: tags)
            device.session = session
        }
    }

    /// Sends one notification to the acquired fd and to the `StartNotify` clients.
    func transmit(_ device: SimulatedDevice, _ characteristic: SimulatedCharacteristic, _ bytes: E4PacketBytes) {
        if self.transmitOversized(device, characteristic, bytes) { return }
        switch characteristic.sendOnNotifySocket(bytes) {
        case nil, EINTR?: break
        case EAGAIN?: device.overflowed += 1
        case _?: self.releaseNotifyFD(characteristic, emit: true)
        }
        if !characteristic.notifyClients.isEmpty, let connection = self.bluez {
            let value = DBusValue.bytes(bytes.withUnsafeBytes { Array($0) })
            // Emitted for every notification, equal values included, as bluetoothd does.
            try? connection.emitSignal(path: characteristic.path, interface: "org.freedesktop.DBus.Properties",
                                       member: "PropertiesChanged",
                                       arguments: [.string(Simulator.characteristicInterface),
                                                   .properties([("Value", value)]), .strings([])])
            connection.objects.setProperty(characteristic.path, interface: Simulator.characteristicInterface,
                                           name: "Value", value: value, emit: false)
        }
    }
}
