#if canImport(Glibc)
import Glibc
#endif
import DBus
import E4

/// Sessions and streaming: a start command begins a numbered session (as on the simulated wristband) that streams
/// the shared packets (``PacketEmitter``) until its central disconnects or unsubscribes from everything.
extension PeripheralSimulator: PacketEmitter {
    /// Starts a new session for `central` (its Device1 path, when bluetoothd said).
    func startSession(central: String?) {
        guard let device = self.device else { return }
        if device.session != nil { self.stopSession(reason: "a new start command arrived") }
        self.beginSession(device)
        self.sessionCentral = central
        self.logger.info("session \(device.sessions) started")
    }

    /// Ends the running session, if any, and flushes the truth so that it is complete on disk.
    func stopSession(reason: String) {
        guard let device = self.device, let session = device.session else { return }
        device.session = nil
        self.sessionCentral = nil
        let sent = self.characteristics.reduce(UInt64(0)) { $0 + $1.notifications }
        self.logger.info("session \(session.number) stopped: \(reason) (\(sent) notifications sent so far)")
        self.truths[device.index]?.flush()
    }

    /// The streaming tick: emits what the running session has due.
    func streamTick() {
        guard let device = self.device else { return }
        let now = self.now
        let tags = device.physiology.tags(through: now)
        guard var session = device.session else { return }
        self.emitDue(device, &session, now: now, tags: tags)
        // A failed send may have ended the session meanwhile.
        if device.session?.number == session.number { device.session = session }
    }

    /// Sends one notification: a packet on the acquired socket (bluetoothd reads one per notification), or a
    /// `PropertiesChanged(Value)` that bluetoothd turns into one.
    func transmit(_ device: SimulatedDevice, _ characteristic: SimulatedCharacteristic, _ bytes: E4PacketBytes) {
        switch characteristic.sendOnNotifySocket(bytes) {
        case nil, EINTR?: break
        case EAGAIN?: device.overflowed += 1
        case _?:
            self.releaseNotifyFD(characteristic, emit: true)
            self.subscriptionsChanged()
        }
        if !characteristic.notifyClients.isEmpty, let connection = self.connection {
            let value = DBusValue.bytes(bytes.withUnsafeBytes { Array($0) })
            // Every notification is a signal, equal values included: bluetoothd notifies on each one.
            try? connection.emitSignal(path: characteristic.path, interface: PeripheralSimulator.propertiesInterface,
                                       member: "PropertiesChanged",
                                       arguments: [.string(PeripheralSimulator.characteristicInterface),
                                                   .properties([("Value", value)]), .strings([])])
            self.setCharacteristic(characteristic, "Value", value, emit: false)
        }
    }
}
