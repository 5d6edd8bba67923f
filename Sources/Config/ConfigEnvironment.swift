/// What the validator needs from the machine, passed in so the `Config` module stays free of I/O.
public struct ConfigEnvironment: Sendable {
    /// The default `agent.id`.
    public var hostname: String
    /// Absolute directory of the configuration file; relative paths in the file are resolved against it.
    public var configDirectory: String

    public init(hostname: String, configDirectory: String) {
        self.hostname = hostname
        self.configDirectory = configDirectory
    }
}
