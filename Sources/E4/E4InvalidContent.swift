/// The field of a correctly sized packet that could not be right, with the value found.
public enum E4InvalidContent: Hashable, Sendable, CustomStringConvertible {
    /// Battery byte 0 above 100 percent.
    case batteryPercent(UInt8)
    /// A temperature sample outside the sensor's range (−40…115 °C), with its sample index and raw value.
    case temperatureRaw(index: Int, raw: UInt16)
    /// A command whose opcode is not a known one (only `0x01`, start, is).
    case commandOpcode(UInt8)

    public var description: String {
        switch self {
        case .batteryPercent(let percent): "battery percent \(percent) above 100"
        case .temperatureRaw(let index, let raw): "temperature sample \(index) raw \(raw) outside -40...115 °C"
        case .commandOpcode(let opcode): "unknown command opcode \(opcode)"
        }
    }
}
