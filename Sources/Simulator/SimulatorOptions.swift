import Logging

/// `empalink-sim`'s parsed command line.
public struct SimulatorOptions: Equatable, Sendable {
    public enum Bus: Equatable, Sendable {
        case address(String)
        case system
        case session
    }

    public var bus: Bus?
    public var devices = 1
    public var seed: UInt64 = 1
    public var scenarioPath: String?
    public var truthDirectory: String?
    public var logLevel = LogLevel.info
    public var help = false

    public init() {}
}
