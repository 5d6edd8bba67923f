#if canImport(Glibc)
import Glibc
#endif
import Consumer
import Posix

/// `empalinkctl e4-server`: Empatica's E4 streaming-server protocol over TCP for the wristbands of the broker
/// (SPEC §17.2).
public enum E4ServerCommand: CtlCommand {
    public static let name = "e4-server"
    public static let summary = "serve the broker's wristbands over Empatica's E4 streaming-server protocol (TCP)"
    public static let usage = """
        empalinkctl e4-server --host H --port P [--prefix P] [--config FILE] [--listen 127.0.0.1:28000]
                              [--decimal-comma] [--no-system-messages] [--all-devices]
        \(ConsumerSetup.commonUsage)
          --listen A:P          the TCP address to serve (an IPv4 literal; default 127.0.0.1:28000)
          --decimal-comma       write ',' as the decimal separator (for the few clients that need it)
          --no-system-messages  do not send 'R connection lost/re-established to device <ID>' lines
          --all-devices         list heart-rate straps too (default: only E4s; a strap offers ibi and bat)
        """

    public static func run(arguments: [String]) -> Int32 {
        let setup: ConsumerSetup
        switch ConsumerSetup.parse(arguments, switches: ["--decimal-comma", "--no-system-messages", "--all-devices"],
                                   valued: ["--listen"]) {
        case .success(let parsed): setup = parsed
        case .failure(let message):
            Console.err("e4-server: \(message.text)")
            Console.err("usage: \(Self.usage)")
            return 2
        }
        var options = E4StreamingServer.Options()
        options.decimalComma = setup.switches.contains("--decimal-comma")
        options.systemMessages = !setup.switches.contains("--no-system-messages")
        options.allDevices = setup.switches.contains("--all-devices")
        if let listen = setup.values["--listen"] {
            guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]),
                  (1...65_535).contains(port), colon != listen.startIndex
            else {
                Console.err("e4-server: --listen must be HOST:PORT with an IPv4 literal, got '\(listen)'")
                return 2
            }
            options.host = String(listen[..<colon])
            options.port = port
        }
        let running: ConsumerSetup.Running
        switch setup.start(command: Self.name) {
        case .success(let value): running = value
        case .failure(let code): return code.code
        }
        let server: E4StreamingServer
        do throws(Errno) {
            server = try E4StreamingServer(options: options, loop: running.loop, logger: running.logger)
        } catch {
            let reason = error == .invalidArgument ? "not an IPv4 address" : "\(error)"
            Console.err("e4-server: error: cannot listen on \(options.host):\(options.port): \(reason)")
            return error == .invalidArgument ? 2 : 1
        }
        running.client.onEvent = { event in
            if case .broker(let connected, let error) = event {
                Console.err(connected ? "e4-server: broker connected" : "e4-server: broker lost: \(error ?? "closed")")
            }
            server.handle(event)
        }
        do {
            try running.client.start()
        } catch {
            Console.err("e4-server: error: \(error)")
            return 2
        }
        Console.err("e4-server: listening on \(options.host):\(options.port)")
        running.loop.run()
        let counters = running.client.counters
        Console.err("e4-server: stopped: \(server.counters) mqtt_received=\(counters.received) "
                        + "malformed=\(counters.malformed) duplicates=\(counters.duplicates) gaps=\(counters.gaps) "
                        + "missing=\(counters.missing)")
        server.close()
        running.client.close()
        return 0
    }
}
