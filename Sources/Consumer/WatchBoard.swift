/// `watch`'s model of the ward (SPEC §17.3): one row per wristband across every board, fed by consumer events,
/// rendered as plain text (`--once`) or as a screen refreshed in place. Pure: time is a parameter.
public struct WatchBoard: Sendable {
    public struct Row: Equatable, Sendable {
        public var device: String
        public var board = ""
        public var status = "?"
        public var allowed: Bool?
        public var rssi: Int?
        public var battery: Double?
        public var heartRate: Double?
        /// Where the heart rate came from (`hr` `source`): `beats`, `spectral`, `device`.
        public var heartRateSource: String?
        public var lastIBI: Double?
        /// A heart-rate sensor's skin contact, as last reported.
        public var contact: Bool?
        public var eda: Double?
        public var temperature: Double?
        public var rxPackets: Int?
        public var lost: Int?
        /// When data last arrived (the caller's clock).
        public var lastSeen: Double?
        init(device: String) { self.device = device }
    }

    public private(set) var rows: [String: Row] = [:]
    /// Spooled records per board.
    public private(set) var spool: [String: Int] = [:]
    public private(set) var boardsOnline: [String: Bool] = [:]
    public var brokerConnected = false
    /// The wristband whose BVP is traced (`nil`: the first connected one).
    public var selected: String?
    var trace: [String: [Double]] = [:]
    static let traceLength = 256

    public init() {}

    public mutating func handle(_ event: ConsumerEvent, now: Double) {
        switch event {
        case .broker(let connected, _):
            self.brokerConnected = connected
        case .agentStatus(let board, let online):
            self.boardsOnline[board] = online
        case .devices(let board, let devices):
            for (serial, seen) in devices {
                var row = self.rows[serial] ?? Row(device: serial)
                row.allowed = seen.allowed
                if row.board.isEmpty { row.board = board }
                if row.status == "?" { row.status = seen.allowed ? "seen" : "not allowed" }
                // A connected wristband does not advertise: its status says `rssi: null` then, and wins.
                if row.status != "connected" { row.rssi = seen.rssi }
                self.rows[serial] = row
            }
        case .deviceStatus(let board, let device, let state):
            var row = self.rows[device] ?? Row(device: device)
            // Several boards may report one wristband (fleet): the one that has it connected wins.
            if state.isConnected || row.board == board || row.status != "connected" {
                row.board = board
                row.status = state.status
                row.allowed = true
                row.rssi = state.rssi
                if let battery = state.battery { row.battery = battery }
            }
            self.rows[device] = row
        case .metrics(let board, let metrics):
            self.spool[board] = metrics.spoolRecords
            for (serial, device) in metrics.devices {
                var row = self.rows[serial] ?? Row(device: serial)
                if row.board.isEmpty || row.board == board {
                    row.board = board
                    row.rxPackets = device.rxPackets
                    row.lost = device.lost
                }
                self.rows[serial] = row
            }
        case .data(let board, let device, let message):
            var row = self.rows[device] ?? Row(device: device)
            row.lastSeen = now
            if row.board.isEmpty { row.board = board }
            switch message.stream {
            case .hr:
                row.heartRate = message.events.last?.value
                row.heartRateSource = message.source
            case .ibi: row.lastIBI = message.events.last?.value
            case .gsr: row.eda = message.samples.last
            case .temp: row.temperature = message.samples.last
            case .battery: row.battery = message.events.last?.value
            case .bvp:
                var samples = self.trace[device] ?? []
                samples += message.samples
                if samples.count > Self.traceLength { samples.removeFirst(samples.count - Self.traceLength) }
                self.trace[device] = samples
            case .contact: row.contact = message.events.last.map { $0.value != 0 }
            case .acc, .tag: break
            }
            self.rows[device] = row
        case .gap:
            break
        }
    }

    /// Whether every connected wristband has shown its heart rate and battery (`--once` waits for it).
    public var complete: Bool {
        let connected = self.rows.values.filter { $0.status == "connected" }
        return !connected.isEmpty && connected.allSatisfy { $0.heartRate != nil && $0.battery != nil }
    }

    public var sortedRows: [Row] { self.rows.values.sorted { ($0.board, $0.device) < ($1.board, $1.device) } }

    /// The table, one line per wristband, and (with `trace`) the selected wristband's BVP.
    public func render(now: Double, trace: Bool, width: Int = 64) -> String {
        var lines: [String] = []
        let header = ["DEVICE", "BOARD", "STATUS", "RSSI", "BATT", "HR", "IBI", "EDA", "TEMP", "LOSS", "SPOOL",
                      "SEEN"]
        var table: [[String]] = [header]
        for row in self.sortedRows {
            let loss: String
            if let lost = row.lost, let rx = row.rxPackets, lost + rx > 0 {
                loss = DecimalText.fixed(100 * Double(lost) / Double(lost + rx), 1) + "%"
            } else {
                loss = "-"
            }
            table.append([
                E4Directory.id(of: row.device), row.board.isEmpty ? "-" : row.board, row.status,
                row.rssi.map { "\($0)" } ?? "-",
                row.battery.map { DecimalText.fixed($0 * 100, 0) + "%" } ?? "-",
                row.heartRate.map { bpm in
                    // Beat-derived values bare, as before; any other source named after the value, in one cell: `96.2(spectral)`.
                    let source = row.heartRateSource.map { $0 == "beats" ? "" : "(" + $0 + ")" } ?? ""
                    return DecimalText.fixed(bpm, 1) + source
                } ?? "-",
                row.lastIBI.map { DecimalText.fixed($0, 3) + "s" } ?? "-",
                row.eda.map { DecimalText.fixed($0, 3) } ?? "-",
                row.temperature.map { DecimalText.fixed($0, 2) } ?? "-",
                loss,
                self.spool[row.board].map { "\($0)" } ?? "-",
                row.lastSeen.map { DecimalText.fixed(max(0, now - $0), 1) + "s" } ?? "-",
            ])
        }
        var widths = [Int](repeating: 0, count: header.count)
        for cells in table { for (index, cell) in cells.enumerated() { widths[index] = max(widths[index], cell.count) } }
        for cells in table {
            var line = ""
            for (index, cell) in cells.enumerated() {
                line += cell + String(repeating: " ", count: widths[index] - cell.count + (index + 1 < cells.count ? 2 : 0))
            }
            lines.append(line)
        }
        if table.count == 1 { lines.append("(no wristbands yet)") }
        if trace, let device = self.traceDevice, let samples = self.trace[device], samples.count > 1 {
            lines.append("")
            lines.append("BVP \(E4Directory.id(of: device)) (last \(DecimalText.fixed(Double(samples.count) / 64, 1)) s)")
            lines.append(Self.sparkline(samples, width: width))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    var traceDevice: String? {
        if let selected = self.selected?.lowercased(), self.rows[selected] != nil { return selected }
        return self.sortedRows.first { $0.status == "connected" }?.device
    }

    /// `samples` as one line of block characters, averaged into `width` columns, scaled to their own range.
    static func sparkline(_ samples: [Double], width: Int) -> String {
        let blocks: [Character] = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"]
        let columns = max(1, min(width, samples.count))
        var means: [Double] = []
        for column in 0..<columns {
            let from = column * samples.count / columns
            let to = max(from + 1, (column + 1) * samples.count / columns)
            means.append(samples[from..<to].reduce(0, +) / Double(to - from))
        }
        let low = means.min() ?? 0
        let high = means.max() ?? 0
        let span = high - low
        return String(means.map { value in
            guard span > 0 else { return blocks[0] }
            return blocks[min(7, max(0, Int((value - low) / span * 7.999)))]
        })
    }
}
