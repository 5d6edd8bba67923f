import Bluetooth
import DBus
import E4
import EventLoop

/// One simulated wristband: identity, radio state, GATT characteristics, physiology and streaming state.
///
/// Device k (1-based) has address `00:07:80:A0:01:kk`, serial `a001kk` and the name "Empatica E4"; a heart-rate
/// strap (``SimulatedDeviceKind/hrs``) `A0:9E:1A:B0:01:kk`, serial `b001kk`, the name "HRM-Sim B001KK", and
/// advertises the Heart Rate and Battery services.
final class SimulatedDevice {
    let index: Int
    let kind: SimulatedDeviceKind
    let address: BluetoothAddress
    let addressString: String
    let serial: String
    let name: String
    let path: String
    /// The adapter this view of the wristband belongs to (0 for `hci0`, see ``SimulatedAdapter``).
    let adapterIndex: Int
    var physiology: PhysiologyModel
    var random: SimRandom
    /// Packet-fault decisions draw from their own stream, so they do not depend on radio timing.
    var faultRandom: SimRandom

    // Radio and bluetoothd state.
    var rssi: Int16
    let rssiCentre: Double
    /// Exported as a Device1 object.
    var exported = false
    var rssiPresent = false
    /// Simulator time of the last advertisement, disconnect or discovery stop (for temporary-device removal).
    var lastActivity = 0.0
    var lastAdvertisement = -1e9
    var state = DeviceConnectionState.disconnected
    var pendingConnect: DBusMethodCall?
    /// `Disconnect` calls answered when the link is down, before `Connected` goes false (bluetoothd's order).
    var pendingDisconnects: [DBusMethodCall] = []
    /// The pending radio step: connect timeout, link up, services resolved, or a `Disconnect`'s two phases.
    var connectTimer: TimerHandle?
    /// The radio link is up (`Connected` is true), whatever the state of a pending `Disconnect`.
    var linkUp = false
    var servicesResolved = false
    var gattExported = false
    var outOfRangeUntil = 0.0
    var packetLoss = 0.0
    var corruption = 0.0

    var characteristics: [SimulatedCharacteristic] = []
    var session: StreamSession?
    var sessions = 0

    // Counters for Stats.
    var connects = 0
    var lost: UInt64 = 0
    var corrupted: UInt64 = 0
    var overflowed: UInt64 = 0

    /// - Parameter address: the wristband's address; `nil` for device k's simulated `00:07:80:A0:01:kk` (the
    ///   peripheral face passes its adapter's, since that is the address a central sees).
    /// - Parameter omitting: characteristics (16-bit UUIDs) left out of the GATT tree (`omit_characteristics`).
    /// - Parameter kind: an E4 or a heart-rate strap.
    /// - Parameter adapter: the adapter index whose object this is (`/org/bluez/hciK/dev_…`); its RSSI sits
    ///   `rssiOffset` dB from `hci0`'s (the same random walk otherwise).
    init(index: Int, seed: UInt64, physiology: PhysiologyParameters, address: BluetoothAddress? = nil,
         omitting: Set<UInt16> = [], kind: SimulatedDeviceKind = .e4, adapter: Int = 0, rssiOffset: Int = 0) {
        self.index = index
        self.kind = kind
        let byte = UInt8(truncatingIfNeeded: index)
        switch kind {
        case .e4: self.address = address ?? BluetoothAddress(0x00, 0x07, 0x80, 0xA0, 0x01, byte)
        case .hrs: self.address = address ?? BluetoothAddress(0xA0, 0x9E, 0x1A, 0xB0, 0x01, byte)
        }
        self.addressString = self.address.description
        self.serial = self.address.serial
        self.name = kind == .e4 ? E4Profile.e4Name : "HRM-Sim " + self.address.serial.uppercased()
        self.adapterIndex = adapter
        self.path = "/org/bluez/hci\(adapter)/dev_" + self.addressString.split(separator: ":").joined(separator: "_")
        self.physiology = PhysiologyModel(seed: seed, device: index, parameters: physiology)
        self.random = SimRandom(seed: seed, UInt64(index), 99)
        self.faultRandom = SimRandom(seed: seed, UInt64(index), 98)
        self.rssiCentre = -55 - 20 * self.random.unit() + Double(rssiOffset)
        self.rssi = Int16(self.rssiCentre.rounded())
        self.characteristics = kind == .e4
            ? SimulatedDevice.makeCharacteristics(devicePath: self.path, omitting: omitting)
            : SimulatedDevice.makeHeartRateCharacteristics(devicePath: self.path)
    }

    /// The GATT layout (SPEC §6) with bluetoothd's handle-based paths, less the characteristics in `omitting`.
    ///
    /// The others keep their handles and paths, and the services stay even when all of theirs are left out: what
    /// a client must cope with is a characteristic it looks for not being there. Leaving a characteristic out of
    /// this list is enough: the tree, its `InterfacesAdded`, streaming and the truth files all go by it.
    static func makeCharacteristics(devicePath: String, omitting: Set<UInt16> = []) -> [SimulatedCharacteristic] {
        let sensor = devicePath + "/service000c"
        let status = devicePath + "/service0019"
        let command = devicePath + "/service0020"
        let all = [
            SimulatedCharacteristic(uuid16: 0x3EA1, handle: 0x000D, servicePath: sensor, flags: ["notify"]),
            SimulatedCharacteristic(uuid16: 0x3EA3, handle: 0x0010, servicePath: sensor, flags: ["notify"]),
            SimulatedCharacteristic(uuid16: 0x3EA6, handle: 0x0013, servicePath: sensor, flags: ["notify"]),
            SimulatedCharacteristic(uuid16: 0x3EA8, handle: 0x0016, servicePath: sensor, flags: ["notify"]),
            SimulatedCharacteristic(uuid16: 0x3EB2, handle: 0x001A, servicePath: status, flags: ["notify"]),
            SimulatedCharacteristic(uuid16: 0x3EB3, handle: 0x001D, servicePath: status, flags: ["read", "notify"]),
            SimulatedCharacteristic(uuid16: 0x3E71, handle: 0x0021, servicePath: command, flags: ["write"]),
        ]
        return all.filter { !omitting.contains($0.uuid16) }
    }

    /// The services: (path, 16-bit UUID, handle).
    var services: [(path: String, uuid16: UInt16, handle: UInt16)] {
        self.kind == .e4 ? SimulatedDevice.makeServices(devicePath: self.path)
            : SimulatedDevice.makeHeartRateServices(devicePath: self.path)
    }

    /// The services a strap names in its advertisement (and BlueZ in `Device1.UUIDs` before connecting); an E4
    /// advertises none.
    var advertisedServices: [UInt16] { self.kind == .e4 ? [] : [0x180D, 0x180F] }

    /// The Heart Rate Service layout of a strap (SPEC §16): Heart Rate (0x2A37 notify, 0x2A38 read), Battery
    /// (0x2A19 read, notify), Device Information (0x2A29, 0x2A24, 0x2A25, 0x2A26 read).
    static func makeHeartRateCharacteristics(devicePath: String) -> [SimulatedCharacteristic] {
        let heartRate = devicePath + "/service000c"
        let battery = devicePath + "/service0012"
        let information = devicePath + "/service0016"
        return [
            SimulatedCharacteristic(uuid16: 0x2A37, handle: 0x000D, servicePath: heartRate, flags: ["notify"]),
            SimulatedCharacteristic(uuid16: 0x2A38, handle: 0x0010, servicePath: heartRate, flags: ["read"]),
            SimulatedCharacteristic(uuid16: 0x2A19, handle: 0x0013, servicePath: battery, flags: ["read", "notify"]),
            SimulatedCharacteristic(uuid16: 0x2A29, handle: 0x0017, servicePath: information, flags: ["read"]),
            SimulatedCharacteristic(uuid16: 0x2A24, handle: 0x0019, servicePath: information, flags: ["read"]),
            SimulatedCharacteristic(uuid16: 0x2A25, handle: 0x001B, servicePath: information, flags: ["read"]),
            SimulatedCharacteristic(uuid16: 0x2A26, handle: 0x001D, servicePath: information, flags: ["read"]),
        ]
    }

    static func makeHeartRateServices(devicePath: String) -> [(path: String, uuid16: UInt16, handle: UInt16)] {
        [(devicePath + "/service000c", 0x180D, 0x000C), (devicePath + "/service0012", 0x180F, 0x0012),
         (devicePath + "/service0016", 0x180A, 0x0016)]
    }

    /// The value a read of a characteristic returns at simulator time `now`.
    func readValue(_ characteristic: SimulatedCharacteristic, at now: Double) -> [UInt8] {
        switch characteristic.uuid16 {
        case 0x2A38: [0x01]  // chest
        case 0x2A29: Array("EmpaLink Simulator".utf8)
        case 0x2A24: Array("HRM-Sim 1".utf8)
        case 0x2A25: Array(self.serial.uppercased().utf8)
        case 0x2A26: Array("1.0.0".utf8)
        default: [self.physiology.batteryPercent(at: now)]
        }
    }

    /// The services below `devicePath`, matching ``makeCharacteristics(devicePath:)``.
    static func makeServices(devicePath: String) -> [(path: String, uuid16: UInt16, handle: UInt16)] {
        [(devicePath + "/service000c", 0x3EA0, 0x000C), (devicePath + "/service0019", 0x3EB0, 0x0019),
         (devicePath + "/service0020", 0x3E70, 0x0020)]
    }

    func characteristic(_ uuid16: UInt16) -> SimulatedCharacteristic? {
        self.characteristics.first { $0.uuid16 == uuid16 }
    }

    func isInRange(at now: Double) -> Bool { now >= self.outOfRangeUntil }

    /// The E4 advertises only while nobody is connected.
    func isAdvertising(at now: Double) -> Bool { self.state == .disconnected && self.isInRange(at: now) }

    /// The advertisement's AD structures (type, data): flags, complete local name, manufacturer data.
    var advertisingData: [(type: UInt8, data: [UInt8])] {
        var structures: [(type: UInt8, data: [UInt8])] = [(0x01, [0x06])]
        var services: [UInt8] = []
        for uuid in self.advertisedServices {
            services.append(UInt8(uuid & 0xFF))
            services.append(UInt8(uuid >> 8))
        }
        if !services.isEmpty { structures.append((0x03, services)) }
        structures.append((0x09, Array(self.name.utf8)))
        structures.append((0xFF, [0xFF, 0xFF] + self.manufacturerPayload))
        return structures
    }

    /// Manufacturer data payload (company 0xFFFF, the SIG's value for testing): the serial's three bytes.
    var manufacturerPayload: [UInt8] { [self.address[3], self.address[4], self.address[5]] }

    /// Moves the RSSI a step of a bounded random walk around the device's centre.
    func stepRSSI() {
        let next = Double(self.rssi) + 0.3 * (self.rssiCentre - Double(self.rssi)) + 6 * self.random.gaussian()
        self.rssi = Int16(min(max(next.rounded(), -100), -30))
    }
}
