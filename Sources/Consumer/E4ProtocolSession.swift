/// One TCP connection's state in Empatica's streaming-server protocol (SPEC §17.2), and the command handling: pure,
/// so every reply is unit-tested without a socket.
public struct E4ProtocolSession: Sendable {
    /// The E4 id this connection is bound to (`device_connect`).
    public private(set) var device: String?
    public private(set) var subscriptions: Set<E4Subscription> = []
    public private(set) var paused = false

    public init() {}

    /// What a command line asks of the connection.
    public struct Reply: Equatable, Sendable {
        /// Without the line end (`\n` is added when sent); `nil` for a blank line.
        public var line: String?
        /// Close the connection gracefully after the reply.
        public var close = false
        /// A subscription was switched on: the server follows the reply with the latest reading of slow streams
        /// (battery), which would otherwise take minutes to show.
        public var subscribed: E4Subscription?
        public init(line: String?, close: Bool = false, subscribed: E4Subscription? = nil) {
            self.line = line
            self.close = close
            self.subscribed = subscribed
        }
    }

    /// Handles one line: `\r` and surrounding whitespace stripped, tokens split on runs of spaces.
    public mutating func handle(_ rawLine: String, directory: E4Directory) -> Reply {
        let tokens = rawLine.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).map(String.init)
        guard let command = tokens.first else { return Reply(line: nil) }
        let arguments = Array(tokens.dropFirst())
        switch command {
        case "server_status":
            return Reply(line: "R server_status OK")
        case "device_discover_list":
            let items = directory.ids.compactMap { id in
                directory.entry(id).map { "\(id) Empatica_E4 \($0.allowed ? "allowed" : "not_allowed")" }
            }
            return Reply(line: Self.list("device_discover_list", items))
        case "device_list":
            let items = directory.ids.filter { directory.entry($0)?.isConnected == true }.map { "\($0) Empatica_E4" }
            return Reply(line: Self.list("device_list", items))
        case "device_connect_btle":
            guard let id = arguments.first else { return Reply(line: "R device_connect_btle ERR missing device id") }
            guard let entry = directory.entry(id) else {
                return Reply(line: "R device_connect_btle ERR device \(id.uppercased()) not found")
            }
            // The edge agent connects whitelisted wristbands by itself; here the link is only checked.
            guard entry.allowed else {
                return Reply(line: "R device_connect_btle ERR device \(id.uppercased()) is not allowed")
            }
            return Reply(line: "R device_connect_btle OK")
        case "device_disconnect_btle":
            guard let id = arguments.first else { return Reply(line: "R device_disconnect_btle ERR missing device id") }
            guard directory.entry(id) != nil else {
                return Reply(line: "R device_disconnect_btle ERR device \(id.uppercased()) not found")
            }
            // The Bluetooth link belongs to the edge agent and stays up for its other consumers.
            return Reply(line: "R device_disconnect_btle OK")
        case "device_connect":
            guard let id = arguments.first, let entry = directory.entry(id), entry.isConnected else {
                return Reply(line: "R device_connect ERR the requested device is not available")
            }
            if self.device != E4Directory.id(of: entry.serial) { self.subscriptions.removeAll() }
            self.device = E4Directory.id(of: entry.serial)
            return Reply(line: "R device_connect OK")
        case "device_disconnect":
            guard self.device != nil else { return Reply(line: "R device_disconnect ERR No connected device.") }
            self.device = nil
            self.subscriptions.removeAll()
            return Reply(line: "R device_disconnect OK", close: true)
        case "device_subscribe":
            let name = arguments.first ?? ""
            guard self.device != nil else {
                return Reply(line: "R device_subscribe \(name.isEmpty ? "" : name + " ")ERR You are not connected to any device")
            }
            guard let stream = E4Subscription(rawValue: name.lowercased()) else {
                return Reply(line: "R device_subscribe \(name.isEmpty ? "" : name + " ")ERR Selected stream is not "
                                 + "valid! Available streams: [acc,bat,bvp,gsr,ibi,tag,tmp]")
            }
            switch arguments.count > 1 ? arguments[1].uppercased() : "" {
            case "ON":
                self.subscriptions.insert(stream)
                return Reply(line: "R device_subscribe \(name) OK", subscribed: stream)
            case "OFF":
                self.subscriptions.remove(stream)
                return Reply(line: "R device_subscribe \(name) OK")
            default:
                return Reply(line: "R device_subscribe \(name) ERR expected ON or OFF")
            }
        case "pause":
            switch arguments.first?.uppercased() {
            case "ON"?:
                self.paused = true
                return Reply(line: "R pause ON")
            case "OFF"?:
                self.paused = false
                return Reply(line: "R pause OFF")
            default:
                return Reply(line: "R pause ERR expected ON or OFF")
            }
        default:
            return Reply(line: "R \(Self.printable(command)) ERR Unknown command")
        }
    }

    /// Whether data of `stream` from wristband `id` goes to this connection now.
    public func wants(_ subscription: E4Subscription, from id: String) -> Bool {
        !self.paused && self.device == id && self.subscriptions.contains(subscription)
    }

    static func list(_ command: String, _ items: [String]) -> String {
        (["R \(command) \(items.count)"] + items).joined(separator: " | ")
    }

    /// At most 64 printable ASCII characters of a client's word, for echoing it back.
    static func printable(_ word: String) -> String {
        String(String.UnicodeScalarView(word.unicodeScalars.prefix(64).map { (0x21...0x7E).contains($0.value) ? $0 : "?" }))
    }
}

/// The streams of the protocol's `device_subscribe`.
public enum E4Subscription: String, CaseIterable, Hashable, Sendable {
    case acc, bat, bvp, gsr, ibi, tag, tmp

    /// The subscription that carries a stream of the MQTT contract (`hr` is derived from `ibi`, as Empatica's
    /// server did, so the published `hr` stream has none).
    public init?(_ stream: ConsumerStream) {
        switch stream {
        case .acc: self = .acc
        case .bvp: self = .bvp
        case .gsr: self = .gsr
        case .temp: self = .tmp
        case .ibi: self = .ibi
        case .battery: self = .bat
        case .tag: self = .tag
        case .hr, .contact: return nil
        }
    }
}
