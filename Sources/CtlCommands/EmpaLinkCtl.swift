#if canImport(Glibc)
import Glibc
#endif
import Config
import Posix

/// `empalinkctl`, the operator's tool: dispatches to one ``CtlCommand`` per subcommand.
public enum EmpaLinkCtl {
    /// Every subcommand, in the order `--help` lists them.
    public static var commands: [any CtlCommand.Type] {[
        StatusCommand.self,
        ModeCommand.self,
        RescanCommand.self,
        ScanCommand.self,
        CaptureCommand.self,
        DecodeCommand.self,
        KeyCommand.self,
        TOMLDecodeCommand.self,
        ConfigReferenceCommand.self,
        IBICommand.self,
        SpoolCommand.self,
        RecordCommand.self,
        E4ServerCommand.self,
        WatchCommand.self,
    ]}

    /// Runs `empalinkctl` with `arguments` (without the program name).
    ///
    /// - Returns: the exit code.
    public static func main(arguments: [String]) -> Int32 {
        // A peer that closes first (the agent at its client limit, `| head`) is an error to report, not a death by
        // signal with exit 141 and no message.
        signal(SIGPIPE, SIG_IGN)
        guard let first = arguments.first else {
            Console.err(self.usage)
            return 2
        }
        if first == "--help" || first == "-h" || first == "help" {
            Console.out(self.usage)
            return 0
        }
        if first == "--version" {
            Console.out("empalinkctl \(Version.string)")
            return 0
        }
        guard let command = self.commands.first(where: { $0.name == first }) else {
            Console.err("empalinkctl: unknown command '\(first)'")
            Console.err(self.usage)
            return 2
        }
        let rest = Array(arguments.dropFirst())
        if rest.contains("--help") || rest.contains("-h") {
            Console.out("usage: \(command.usage)")
            return 0
        }
        return command.run(arguments: rest)
    }

    static var usage: String {
        var text = "usage: empalinkctl COMMAND [OPTIONS]\n\ncommands:\n"
        let width = self.commands.map { $0.name.count }.max() ?? 0
        for command in self.commands {
            let padding = String(repeating: " ", count: width - command.name.count + 2)
            text += "  \(command.name)\(padding)\(command.summary)\n"
        }
        text += "\n`empalinkctl COMMAND --help` shows a command's options."
        return text
    }
}
