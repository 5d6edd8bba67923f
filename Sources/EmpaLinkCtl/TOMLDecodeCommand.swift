import Config
import Posix

/// `empalinkctl toml-decode`: TOML on stdin → toml-test decoder JSON on stdout. (Placeholder.)
public enum TOMLDecodeCommand: CtlCommand {
    public static let name = "toml-decode"
    public static let summary = "decode TOML from stdin to toml-test JSON (parser conformance hook)"
    public static let usage = "empalinkctl toml-decode < FILE.toml"

    public static func run(arguments: [String]) -> Int32 {
        Console.err("toml-decode: not implemented yet")
        return 1
    }
}
