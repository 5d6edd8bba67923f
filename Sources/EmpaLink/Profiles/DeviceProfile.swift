import Bluetooth

/// A kind of device (SPEC §15): how it is recognised, which GATT characteristics it needs and which are optional,
/// how a session starts, and how its values are decoded.
///
/// The device manager knows devices only through this seam: it finds the profile's characteristics by UUID,
/// subscribes to those that notify, writes ``sessionStart(unixTime:)`` in order, reads those marked
/// ``ProfileCharacteristic/readAtStart``, and hands every value to the profile's ``ProfileDecoder`` under its
/// *channel* — the characteristic's index in ``characteristics``. BlueZ, the agent, the spool and MQTT never see a
/// profile's UUIDs. The E4 (``E4DeviceProfile``) is the first profile; the standard Heart Rate Service
/// (``HRSDeviceProfile``, SPEC §16) the second, each registered in ``EmpaticaAPI/Options/profiles``.
///
/// Profiles are plain values, described once; only their decoders hold state.
public protocol DeviceProfile: Sendable {
    /// The profile's short name, e.g. `"e4"` (as a `profile = "…"` key of a `[[wristband]]` entry would name it).
    var name: String { get }
    /// The name a device of this kind is shown with when it advertises none.
    var displayName: String { get }
    /// Whether a device belongs to this profile, from what BlueZ knows of it: its advertised name and the service
    /// UUIDs it advertised or resolved.
    func recognizes(name: String?, serviceUUIDs: [BluetoothUUID]) -> Bool
    /// What a passive advertisement monitor matches for this profile in background mode (SPEC §5).
    var advertisementPatterns: [AdvertisementPattern] { get }
    /// The characteristics, in channel order. Read once per device.
    var characteristics: [ProfileCharacteristic] { get }
    /// The writes that start streaming once every present notifying characteristic is subscribed, in order; empty
    /// when subscribing is enough.
    ///
    /// - Parameter unixTime: now, in seconds since 1970 (the E4's start command carries it).
    func sessionStart(unixTime: Double) -> [ProfileWrite]
    /// Fresh decoding state for one device: its decoders, stream clocks and beat detection.
    func makeDecoder() -> any ProfileDecoder
    /// Whether the API key's device list must name the device's serial before it may be connected (the EmpaLink
    /// SDK's rule for Empatica devices). A profile for third-party devices answers `false`: for those an
    /// authenticated key and the agent's whitelist are enough.
    var requiresKeyGrant: Bool { get }
}

extension DeviceProfile {
    public var requiresKeyGrant: Bool { true }
}
