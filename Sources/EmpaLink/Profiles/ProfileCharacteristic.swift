import Bluetooth

/// One GATT characteristic a ``DeviceProfile`` uses.
public struct ProfileCharacteristic: Sendable, Equatable {
    /// The characteristic's UUID, compared with BlueZ's already parsed ``BluetoothUUID`` values.
    public var uuid: BluetoothUUID
    /// What it is, for messages: `"BVP"` in "no BVP characteristic …".
    public var label: String
    /// Subscribed for notifications (AcquireNotify, falling back to StartNotify) — where the device's characteristic
    /// offers them (its GATT flags say `notify` or `indicate`); where it does not, it is not subscribed, and only
    /// ``isRequired`` decides whether the device can be used without.
    public var notifies: Bool
    /// Read once when the session has started, its value decoded like a notification (e.g. a battery level).
    public var readAtStart: Bool
    /// Without it the device cannot be used: the attempt waits for it, then fails. Without an optional one the
    /// session goes on with what is there.
    public var isRequired: Bool

    public init(uuid: BluetoothUUID, label: String, notifies: Bool, readAtStart: Bool = false, isRequired: Bool) {
        self.uuid = uuid
        self.label = label
        self.notifies = notifies
        self.readAtStart = readAtStart
        self.isRequired = isRequired
    }
}
