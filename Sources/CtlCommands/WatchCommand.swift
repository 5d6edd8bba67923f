#if canImport(Glibc)
import Glibc
#endif
import Consumer
import EventLoop
import Posix

/// `empalinkctl watch`: the ward at a glance (SPEC §17.3).
public enum WatchCommand: CtlCommand {
    public static let name = "watch"
    public static let summary = "live view of every board's wristbands (HR, battery, EDA, loss, spool, BVP trace)"
    public static let usage = """
        empalinkctl watch --host H --port P [--prefix P] [--config FILE] [--device ID] [--once [--wait S]]
        \(ConsumerSetup.commonUsage)
          --device ID    the wristband whose BVP is traced (default: the first connected one)
          --once         print one plain-text snapshot and exit: as soon as every connected wristband has
                         shown its heart rate and battery, or after --wait seconds (default 5, 1-600)
        """

    public static func run(arguments: [String]) -> Int32 {
        let setup: ConsumerSetup
        switch ConsumerSetup.parse(arguments, switches: ["--once"], valued: ["--device", "--wait"]) {
        case .success(let parsed): setup = parsed
        case .failure(let message):
            Console.err("watch: \(message.text)")
            Console.err("usage: \(Self.usage)")
            return 2
        }
        let once = setup.switches.contains("--once")
        guard let wait = CtlSupport.seconds(setup.values["--wait"], default: 5, range: 1...600) else {
            Console.err("watch: --wait must be a whole number of seconds in 1...600")
            return 2
        }
        let running: ConsumerSetup.Running
        switch setup.start(command: Self.name) {
        case .success(let value): running = value
        case .failure(let code): return code.code
        }
        var board = WatchBoard()
        board.selected = setup.values["--device"]
        var everConnected = false
        var lastError: String?
        running.client.onEvent = { event in
            if case .broker(let connected, let error) = event {
                everConnected = everConnected || connected
                lastError = error
            }
            board.handle(event, now: ConsumerClient.now)
            if once && board.complete { running.loop.stop() }
        }
        do {
            try running.client.start()
            if once {
                try running.loop.scheduleTimer(after: .seconds(Int64(wait))) { running.loop.stop() }
            } else {
                // Hide the cursor while drawing; a plain screen again on exit.
                try? FileDescriptor.standardOutput.writeAll("\u{1B}[?25l")
                try running.loop.scheduleTimer(after: .zero, repeating: .milliseconds(500)) {
                    let now = ConsumerClient.now
                    var screen = "\u{1B}[H\u{1B}[2J"
                    screen += "empalink watch — broker \(board.brokerConnected ? "connected" : "not connected")"
                    screen += "  (Ctrl-C quits)\n\n"
                    screen += board.render(now: now, trace: true)
                    try? FileDescriptor.standardOutput.writeAll(screen)
                }
            }
        } catch {
            Console.err("watch: error: \(error)")
            return 2
        }
        running.loop.run()
        running.client.close()
        if !once {
            Console.out("\u{1B}[?25h")
            return 0
        }
        guard everConnected else {
            Console.err("watch: error: cannot reach the broker: \(lastError ?? "no connection within \(wait) s")")
            return 1
        }
        try? FileDescriptor.standardOutput.writeAll(board.render(now: ConsumerClient.now, trace: false))
        return 0
    }
}
