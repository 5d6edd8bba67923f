import Config
import Posix

/// `empalinkctl config-reference`: prints the configuration reference (Docs/configuration.md) from the
/// validator's own key table, so the document cannot drift from the code.
public enum ConfigReferenceCommand: CtlCommand {
    public static let name = "config-reference"
    public static let summary = "print the configuration reference (Markdown) from the validator's key table"
    public static let usage = "empalinkctl config-reference"

    public static func run(arguments: [String]) -> Int32 {
        guard arguments.isEmpty else {
            Console.err("config-reference: unexpected argument '\(arguments[0])'")
            Console.err("usage: \(self.usage)")
            return 2
        }
        var text = ConfigReference.markdown()
        if text.hasSuffix("\n") { text.removeLast() }
        Console.out(text)
        return 0
    }
}
