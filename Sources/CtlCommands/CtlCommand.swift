/// One `empalinkctl` subcommand. `--help` text and dispatch come from the same table (``EmpaLinkCtl/commands``).
public protocol CtlCommand {
    /// The word after `empalinkctl`, e.g. "toml-decode".
    static var name: String { get }
    /// One line for the command list.
    static var summary: String { get }
    /// The usage line(s), e.g. "empalinkctl toml-decode < FILE.toml".
    static var usage: String { get }
    /// Runs the command with the arguments after its name.
    ///
    /// - Returns: the process exit code: 0 ok, 1 runtime failure, 2 usage or configuration error.
    static func run(arguments: [String]) -> Int32
}
