/// BlueZ's bus name, interfaces and error names (bluez/doc/org.bluez.*.rst, BlueZ 5.66).
public enum BlueZNames {
    public static let service = "org.bluez"
    public static let root = "/org/bluez"
    public static let adapter = "org.bluez.Adapter1"
    public static let device = "org.bluez.Device1"
    public static let gattService = "org.bluez.GattService1"
    public static let gattCharacteristic = "org.bluez.GattCharacteristic1"
    public static let advertisementMonitorManager = "org.bluez.AdvertisementMonitorManager1"
    public static let properties = "org.freedesktop.DBus.Properties"
    public static let objectManager = "org.freedesktop.DBus.ObjectManager"

    /// Errors the client expects and handles (SPEC §5).
    public enum Error {
        public static let inProgress = "org.bluez.Error.InProgress"
        public static let failed = "org.bluez.Error.Failed"
        public static let notReady = "org.bluez.Error.NotReady"
        public static let doesNotExist = "org.bluez.Error.DoesNotExist"
        public static let notConnected = "org.bluez.Error.NotConnected"
        public static let notPermitted = "org.bluez.Error.NotPermitted"
        public static let notSupported = "org.bluez.Error.NotSupported"
        public static let alreadyConnected = "org.bluez.Error.AlreadyConnected"
        /// Ours, never BlueZ's: a reply BlueZ would not send (``BlueZClient/malformedReplies``). For `AcquireNotify`
        /// the acquisition may still be held on BlueZ's side; `StopNotify` releases it.
        public static let malformedReply = "org.empalink.Error.MalformedReply"
        /// A call in flight when `org.bluez` changed owner: failed by the client, not by BlueZ.
        public static let ownerChanged = "org.empalink.Error.OwnerChanged"
    }
}
