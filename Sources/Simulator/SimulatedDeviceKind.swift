/// What a simulated device is: an Empatica E4 (SPEC §6) or a standard Bluetooth heart-rate sensor (a chest strap
/// speaking the Heart Rate Service, SPEC §16).
public enum SimulatedDeviceKind: String, Sendable, Equatable {
    case e4
    case hrs
}
