/// A fault the simulator can inject, from the scenario file or the control interface.
public enum FaultAction: Hashable, Sendable {
    /// Drops the connection as a radio loss would (`Connected = false`, notification fds hang up).
    case disconnect(device: String)
    /// Stops advertising and answering for `seconds` (drops a connection).
    case outOfRange(device: String, seconds: Double)
    /// Drops this fraction of notifications (the flow counter still advances).
    case packetLoss(device: String, rate: Double)
    /// Garbles this fraction of notifications (wrong length or flipped bits).
    case corruption(device: String, rate: Double)
    /// Powers adapter `hci<adapter>` off (`hci0` unless said); back on after `seconds` (never when `seconds` ≤ 0).
    case powerOff(seconds: Double, adapter: Int = 0)
    /// The BlueZ face leaves the bus for `seconds`, then returns with a new unique name (a bluetoothd restart).
    case restart(seconds: Double)
    /// A button press on the wristband.
    case tag(device: String)
    /// The next `count` calls of `method` fail with `name: message`.
    case error(method: String, name: String, message: String, count: Int)
}
