import EventLoop
import Posix

/// One GATT characteristic of a simulated wristband, with its notification subscribers: at most one acquired
/// fd (`AcquireNotify`) or any number of `StartNotify` clients, as bluetoothd allows.
final class SimulatedCharacteristic {
    let uuid16: UInt16
    /// The declaration handle; the object path is `…/char%04x` of it, the value handle is the next one.
    let handle: UInt16
    let path: String
    let servicePath: String
    let flags: [String]
    /// Our end of the acquired notification socket.
    var notifyFD: FileDescriptor?
    var notifyRegistration: IORegistration?
    /// The unique bus name that acquired ``notifyFD``: bluetoothd releases the fd when that client leaves.
    var notifyOwner: String?
    /// Unique bus names of `StartNotify` clients.
    var notifyClients: [String] = []
    var notifications: UInt64 = 0

    init(uuid16: UInt16, handle: UInt16, servicePath: String, flags: [String]) {
        self.uuid16 = uuid16
        self.handle = handle
        self.servicePath = servicePath
        self.path = servicePath + "/char" + SimulatedCharacteristic.hex4(handle)
        self.flags = flags
    }

    var canNotify: Bool { self.flags.contains("notify") }
    var canRead: Bool { self.flags.contains("read") }
    var canWrite: Bool { self.flags.contains("write") || self.flags.contains("write-without-response") }
    var hasSubscribers: Bool { self.notifyFD != nil || !self.notifyClients.isEmpty }

    /// The 128-bit UUID string BlueZ shows.
    var uuidString: String { SimulatedCharacteristic.uuid128(self.uuid16) }

    static func uuid128(_ uuid16: UInt16) -> String {
        "0000" + SimulatedCharacteristic.hex4(uuid16) + "-0000-1000-8000-00805f9b34fb"
    }

    static func hex4(_ value: UInt16) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
