import Config
import Posix

/// `empalinkctl toml-decode`: TOML on stdin → toml-test decoder JSON on stdout.
///
/// The conformance hook for our parser: the TOML ecosystem's shared suite (toml-test) and our own pytest
/// corpus drive the parser through this command. Date/time values are rejected like every other error, by design
/// of the configuration format.
public enum TOMLDecodeCommand: CtlCommand {
    public static let name = "toml-decode"
    public static let summary = "decode TOML from stdin to toml-test JSON (parser conformance hook)"
    public static let usage = "empalinkctl toml-decode < FILE.toml"

    /// - Returns: 0 with the JSON on stdout; 1 with `toml-decode: LINE:COL: MESSAGE` on stderr for invalid TOML
    ///   or unreadable input; 2 for unexpected arguments.
    public static func run(arguments: [String]) -> Int32 {
        guard arguments.isEmpty else {
            Console.err("toml-decode: unexpected argument '\(arguments[0])'")
            Console.err("usage: \(self.usage)")
            return 2
        }
        let input: [UInt8]
        do throws(Errno) {
            input = try FileDescriptor.standardInput.readToEnd()
        } catch {
            Console.err("toml-decode: cannot read standard input: \(error)")
            return 1
        }
        do throws(TOMLError) {
            let table = try TOMLParser.parse(input)
            Console.out(table.tomlTestJSON.serialized())
            return 0
        } catch {
            Console.err("toml-decode: \(error)")
            return 1
        }
    }
}
