#if canImport(Glibc)
import Glibc
#endif
import Logging
import Posix

/// `record`'s engine (SPEC §17.1): turns the consumer core's in-order stream messages into E4 connect session
/// exports, one zip per wristband session.
///
/// A session is one wristband's stretch of one connection (`sid`) that the sample grid can span honestly (see
/// ``SampleGrid``): it starts at the first whole second of its first sampled message and ends when the wristband
/// disconnects or another `sid` appears (after ``Options/lingerSeconds``, so that late messages still land), when a
/// stream cannot continue its grid (a new session starts at that point), after ``Options/idleSeconds`` without
/// data, or when the recorder stops. While it is recorded its CSVs grow under `OUT/.partial/`; a session left there
/// by a crash is closed at the next start.
public final class E4SessionRecorder {
    public struct Options: Sendable {
        public var directory: String
        /// The longest loss filled by interpolation (seconds); a longer one splits the session.
        public var maximumFillSeconds = 1.0
        public var idleSeconds = 120.0
        public var lingerSeconds = 5.0
        public init(directory: String) { self.directory = directory }
    }

    public struct Counters: Equatable, Sendable, CustomStringConvertible {
        public var sessionsWritten = 0
        public var sessionsRecovered = 0
        public var splits = 0
        public var filledSamples = 0
        public var droppedSamples = 0
        public var droppedEvents = 0
        public var writeErrors = 0
        public var description: String {
            "sessions=\(self.sessionsWritten) recovered=\(self.sessionsRecovered) splits=\(self.splits) "
                + "filled_samples=\(self.filledSamples) dropped_samples=\(self.droppedSamples) "
                + "dropped_events=\(self.droppedEvents) write_errors=\(self.writeErrors)"
        }
    }

    /// Computes `HR.csv` for a session directory holding `BVP.csv` and `ACC.csv` (the `Physio` engine, wired by the
    /// command so that `record` and `empalinkctl ibi --hr` run the same code).
    public typealias HeartRate = (_ directory: String, _ start: Int) -> String

    let options: Options
    let heartRate: HeartRate
    let logger: Logger
    public private(set) var counters = Counters()
    /// Open sessions by device serial, oldest first.
    var sessions: [String: [Session]] = [:]
    /// Zips written, newest last (for logs and tests).
    public private(set) var written: [String] = []

    final class Session {
        let device: String
        let sid: String
        var board: String
        let start: Int
        let directory: String
        let zipPath: String
        var grids: [ConsumerStream: SampleGrid] = [:]
        var pending: [String: String] = [:]
        /// Samples at or after this time belong to a later session (after a split).
        var endTime = Double.infinity
        var closeAt: Double?
        var closeReason = ""
        var lastHeard: Double
        var events: [ConsumerStream: Int] = [:]
        var sequenceGaps = 0
        var missingMessages = 0

        init(device: String, sid: String, board: String, start: Int, directory: String, zipPath: String, now: Double) {
            self.device = device
            self.sid = sid
            self.board = board
            self.start = start
            self.directory = directory
            self.zipPath = zipPath
            self.lastHeard = now
        }

        func rows(_ stream: ConsumerStream) -> Int { self.grids[stream]?.rows ?? 0 }
    }

    /// Creates `OUT` and `OUT/.partial` and closes every session a previous run left unfinished.
    ///
    /// - Throws: ``Errno`` when the directories cannot be created.
    public init(options: Options, logger: Logger, heartRate: @escaping HeartRate) throws(Errno) {
        self.options = options
        self.logger = logger
        self.heartRate = heartRate
        try E4SessionFiles.makeDirectory(options.directory)
        try E4SessionFiles.makeDirectory(self.partialDirectory)
        self.recover()
    }

    var partialDirectory: String { self.options.directory + "/.partial" }

    // MARK: events

    public func handle(_ event: ConsumerEvent, now: Double) {
        switch event {
        case .data(let board, let device, let message):
            if message.stream.isSampled {
                self.place(message, board: board, device: device, now: now)
            } else if message.stream == .ibi || message.stream == .tag {
                self.placeEvents(message, board: board, device: device, now: now)
            }
        case .deviceStatus(_, let device, let state) where !state.isConnected:
            for session in self.sessions[device] ?? [] where session.closeAt == nil {
                session.closeAt = now + self.options.lingerSeconds
                session.closeReason = "the wristband disconnected"
            }
        case .gap(_, let device, _, let sid, _, let count):
            for session in self.sessions[device] ?? [] where session.sid == sid {
                session.sequenceGaps += 1
                session.missingMessages += count
            }
        default:
            break
        }
    }

    func place(_ message: DataMessage, board: String, device: String, now: Double) {
        var message = message
        var list = self.sessions[device] ?? []
        let halfSample = 0.5 / message.rate
        // A message may straddle a split: the part before the later session's start goes to the earlier one.
        while message.count > 0 {
            let last = message.time(of: message.count - 1)
            // The session the message starts in; or, for a message that begins before the first session of its sid
            // (the one that opened it: its samples before the start are dropped by the grid), that one.
            let index = list.lastIndex { $0.sid == message.sid && Double($0.start) - halfSample <= message.start }
                ?? list.firstIndex { $0.sid == message.sid && Double($0.start) - halfSample <= last }
            guard let index, message.start < list[index].endTime else {
                if list.contains(where: { $0.sid == message.sid && last < Double($0.start) - halfSample }) {
                    // Older than every open session of this sid: its session is closed already.
                    self.counters.droppedSamples += message.count
                    break
                }
                // A new session waits until every sampled stream has spoken (or ``openingSeconds``), so that its
                // start T is a second that all of them cover: no stream then begins with made-up rows.
                var opening = self.opening[device] ?? Opening(sid: message.sid, board: board, since: now)
                if opening.sid != message.sid { opening = Opening(sid: message.sid, board: board, since: now) }
                opening.messages.append(message)
                self.opening[device] = opening
                if Set(opening.messages.map(\.stream)).count < 4 && now - opening.since < Self.openingSeconds { break }
                self.sessions[device] = list
                self.openBuffered(device: device, now: now)
                return
            }
            let session = list[index]
            var head = message
            var rest: DataMessage?
            if session.endTime.isFinite {
                var keep = 0
                while keep < message.count && message.time(of: keep) < session.endTime - halfSample { keep += 1 }
                if keep < message.count {
                    head.samples = Array(message.samples[0..<(keep * message.stream.columns)])
                    var tail = message
                    tail.samples = Array(message.samples[(keep * message.stream.columns)...])
                    tail.start = message.time(of: keep)
                    rest = tail
                }
            }
            if head.count > 0 && !self.append(head, to: session, now: now) {
                // The grid cannot continue: end this session at the sample that does not fit, open the next one.
                if session.endTime.isFinite {
                    self.counters.droppedSamples += head.count
                } else {
                    self.counters.splits += 1
                    // The next session starts after everything the other streams placed here already, so that none
                    // of their rows moves; the rest of this stream up to there is dropped.
                    let placed = session.grids.values.map(\.endTime).max() ?? head.start
                    let next = max(Int(max(head.start, placed).rounded(.up)), session.start + 1)
                    session.endTime = Double(next)
                    session.closeAt = now + self.options.lingerSeconds
                    session.closeReason = "a \(head.stream.rawValue) gap the sample grid cannot span"
                    let successor = self.open(device: device, sid: message.sid, board: board, first: Double(next),
                                              now: now)
                    list.append(successor)
                    self.sessions[device] = list
                    continue
                }
            }
            guard let rest else { break }
            message = rest
        }
        self.sessions[device] = list
    }

    /// - Returns: false when the message cannot continue the session's grid.
    func append(_ message: DataMessage, to session: Session, now: Double) -> Bool {
        guard let file = E4SessionFiles.file(for: message.stream) else { return true }
        var grid = session.grids[message.stream]
            ?? SampleGrid(start: Double(session.start), rate: message.rate, columns: message.stream.columns,
                          maximumFillSeconds: self.maximumFill(message.stream))
        let before = grid.droppedBeforeStart
        let overlapping = grid.droppedOverlapping
        let outcome = grid.place(time: message.start, samples: message.samples)
        self.counters.droppedSamples += grid.droppedBeforeStart - before + grid.droppedOverlapping - overlapping
        switch outcome {
        case .split:
            return false
        case .dropped:
            if grid.rows == 0 && grid.droppedBeforeStart == before { self.counters.droppedSamples += message.count }
            session.grids[message.stream] = grid
            return true
        case .rows(let values, let filled):
            self.counters.filledSamples += filled
            if filled > 0, let run = grid.fills.last {
                // Kept beside the data, so that a session closed after a crash still lists its filled rows.
                session.pending["session.txt", default: ""] += "fill=\(file),\(run.row),\(run.count)\n"
            }
            let columns = message.stream.columns
            var text = ""
            var index = 0
            while index + columns <= values.count {
                text += E4SessionFiles.row(message.stream, values[index..<(index + columns)])
                index += columns
            }
            session.pending[file, default: ""] += text
            session.grids[message.stream] = grid
            session.lastHeard = now
            return true
        }
    }

    /// A wristband's messages of a new `sid` before its first session has a start.
    struct Opening {
        var sid: String
        var board: String
        var since: Double
        var messages: [DataMessage] = []
    }

    var opening: [String: Opening] = [:]
    static let openingSeconds = 4.0

    /// Opens the first session of the buffered `sid` at the first whole second every buffered stream covers, then
    /// places the buffered messages.
    func openBuffered(device: String, now: Double) {
        guard let opening = self.opening.removeValue(forKey: device) else { return }
        var firsts: [ConsumerStream: Double] = [:]
        for message in opening.messages where message.stream.isSampled && firsts[message.stream] == nil {
            firsts[message.stream] = message.start
        }
        // Without sampled streams (a strap), the first beat's second.
        let firstBeat = opening.messages.filter { $0.stream == .ibi }.compactMap { $0.events.first?.time }.min()?
            .rounded(.down)
        guard let latest = firsts.values.max() ?? firstBeat else { return }
        var list = self.sessions[device] ?? []
        for other in list where other.sid != opening.sid && other.closeAt == nil {
            other.closeAt = now + self.options.lingerSeconds
            other.closeReason = "the wristband started a new connection session"
        }
        list.append(self.open(device: device, sid: opening.sid, board: opening.board, first: latest, now: now))
        self.sessions[device] = list
        for message in opening.messages {
            if message.stream.isSampled {
                self.place(message, board: opening.board, device: device, now: now)
            } else {
                self.placeEvents(message, board: opening.board, device: device, now: now)
            }
        }
    }

    /// The gap policy's limit for a stream: `--max-fill` for BVP and ACC; four times it for EDA and temperature,
    /// slow signals whose one lost packet already spans 1.5 s (EDA) or 2 s (temperature).
    func maximumFill(_ stream: ConsumerStream) -> Double {
        stream == .gsr || stream == .temp ? 4 * self.options.maximumFillSeconds : self.options.maximumFillSeconds
    }

    func placeEvents(_ message: DataMessage, board: String, device: String, now: Double) {
        if var opening = self.opening[device], opening.sid == message.sid {
            opening.messages.append(message)
            self.opening[device] = opening
            return
        }
        let list = self.sessions[device] ?? []
        // A heart-rate strap (SPEC §16) has no sampled stream: its IBIs open its session, as BVP would.
        if message.stream == .ibi, !list.contains(where: { $0.sid == message.sid }) {
            self.opening[device] = Opening(sid: message.sid, board: board, since: now, messages: [message])
            return
        }
        for event in message.events {
            guard let session = list.last(where: {
                $0.sid == message.sid && Double($0.start) <= event.time && event.time < $0.endTime
            }), let file = E4SessionFiles.file(for: message.stream) else {
                self.counters.droppedEvents += 1
                continue
            }
            let line: String
            if message.stream == .ibi {
                line = "\(DecimalText.fixed(event.time - Double(session.start), 6)),\(DecimalText.fixed(event.value, 6))\n"
            } else {
                line = DecimalText.fixed(event.time, 2) + "\n"
            }
            session.pending[file, default: ""] += line
            session.events[message.stream, default: 0] += 1
            session.lastHeard = now
        }
    }

    func open(device: String, sid: String, board: String, first: Double, now: Double) -> Session {
        let start = Int(first.rounded(.up))
        let id = E4Directory.id(of: device)
        var name = "\(start)_\(id)"
        var suffix = 2
        while E4SessionFiles.exists(self.options.directory + "/" + name + ".zip")
            || E4SessionFiles.exists(self.partialDirectory + "/" + name)
        {
            name = "\(start)_\(id)-\(suffix)"
            suffix += 1
        }
        let directory = self.partialDirectory + "/" + name
        let session = Session(device: device, sid: sid, board: board, start: start, directory: directory,
                              zipPath: self.options.directory + "/" + name + ".zip", now: now)
        do throws(Errno) {
            try E4SessionFiles.makeDirectory(directory)
            try E4SessionFiles.append("start=\(start)\nid=\(id)\nsid=\(sid)\nboard=\(board)\n",
                                      to: directory + "/session.txt")
            for (file, header) in E4SessionFiles.headers(start: start) {
                try E4SessionFiles.append(header, to: directory + "/" + file)
            }
        } catch {
            self.counters.writeErrors += 1
            self.logger.error("record: \(directory): cannot create the session files: \(error)")
        }
        self.logger.info("record: session \(name) opened (sid \(sid), board \(board))")
        return session
    }

    // MARK: time

    /// Writes what arrived since the last tick and closes sessions that are due; call about once a second.
    public func tick(now: Double) {
        for (device, opening) in self.opening where now - opening.since >= Self.openingSeconds {
            self.openBuffered(device: device, now: now)
        }
        for (device, list) in self.sessions {
            var keep: [Session] = []
            for session in list {
                self.flush(session)
                if let closeAt = session.closeAt, now >= closeAt {
                    self.close(session, reason: session.closeReason)
                } else if now - session.lastHeard > self.options.idleSeconds {
                    self.close(session, reason: "no data for \(Int(self.options.idleSeconds)) s")
                } else {
                    keep.append(session)
                }
            }
            self.sessions[device] = keep.isEmpty ? nil : keep
        }
    }

    /// Closes every open session (the recorder stops).
    public func closeAll() {
        for list in self.sessions.values {
            for session in list { self.close(session, reason: session.closeAt != nil ? session.closeReason
                                                                                    : "the recorder stopped") }
        }
        self.sessions.removeAll()
    }

    func flush(_ session: Session) {
        for (file, text) in session.pending where !text.isEmpty {
            do throws(Errno) {
                try E4SessionFiles.append(text, to: session.directory + "/" + file)
            } catch {
                self.counters.writeErrors += 1
                self.logger.error("record: \(session.directory)/\(file): cannot write: \(error)")
            }
        }
        session.pending.removeAll(keepingCapacity: true)
    }

    func close(_ session: Session, reason: String) {
        self.flush(session)
        let rows = ConsumerStream.allCases.filter(\.isSampled).map { session.rows($0) }
        // A heart-rate strap's session has IBIs and no samples.
        guard rows.contains(where: { $0 > 0 }) || session.events[.ibi, default: 0] > 0 else {
            // Nothing was placed: no export.
            for name in E4SessionFiles.entries(of: session.directory) { unlink(session.directory + "/" + name) }
            rmdir(session.directory)
            return
        }
        let filled = session.grids.values.reduce(0) { $0 + $1.filled }
        self.flush(session)
        let facts = """
            device: \(E4Directory.id(of: session.device)) (serial \(session.device)), board \(session.board), \
            connection session \(session.sid)
            rows: ACC \(session.rows(.acc)), BVP \(session.rows(.bvp)), EDA \(session.rows(.gsr)), \
            TEMP \(session.rows(.temp)); IBI \(session.events[.ibi] ?? 0), tags \(session.events[.tag] ?? 0)
            rows filled by the gap policy (interpolated, or copies of the first sample): \(filled)
            MQTT messages missing (sid/seq gaps): \(session.missingMessages) in \(session.sequenceGaps) gaps
            closed: \(reason)
            """
        self.finish(directory: session.directory, start: session.start, zipPath: session.zipPath, facts: facts)
    }

    func finish(directory: String, start: Int, zipPath: String, facts: String) {
        let facts = facts + "\n" + Self.fillListing(directory: directory)
        do throws(Errno) {
            try E4SessionFiles.write(Array(self.heartRate(directory, start).utf8), to: directory + "/HR.csv",
                                     sync: false)
            try E4SessionFiles.write(Array(Self.info(start: start, maximumFill: self.options.maximumFillSeconds, facts: facts).utf8), to: directory + "/info.txt",
                                     sync: false)
        } catch {
            self.counters.writeErrors += 1
            self.logger.error("record: \(directory): cannot write HR.csv/info.txt: \(error)")
        }
        unlink(directory + "/session.txt")
        do throws(ZipArchive.Failure) {
            try E4SessionFiles.finalise(directory: directory, start: start, zipPath: zipPath,
                                        outDirectory: self.options.directory)
            self.counters.sessionsWritten += 1
            self.written.append(zipPath)
            self.logger.info("record: wrote \(zipPath)")
        } catch {
            self.counters.writeErrors += 1
            self.logger.error("record: \(zipPath): \(error); the session stays in \(directory)")
        }
    }

    /// Closes the sessions a previous run left in `OUT/.partial` (a crash, `kill -9`, power loss): each file is cut
    /// after its last complete row and the session is zipped as it stands.
    func recover() {
        for name in E4SessionFiles.entries(of: self.partialDirectory) {
            let directory = self.partialDirectory + "/" + name
            let meta = (try? readFile(atPath: directory + "/session.txt", limit: 64 << 20)).map {
                String(decoding: $0, as: UTF8.self)
            } ?? ""
            var values: [String: String] = [:]
            for line in meta.split(separator: "\n") {
                let parts = line.split(separator: "=", maxSplits: 1)
                if parts.count == 2 { values[String(parts[0])] = String(parts[1]) }
            }
            guard let startText = values["start"], let start = Int(startText) else {
                self.logger.warn("record: \(directory) has no session.txt; left alone")
                continue
            }
            for file in E4SessionFiles.liveFiles { E4SessionFiles.truncateToLastLine(directory + "/" + file) }
            var zipName = name
            var suffix = 2
            while E4SessionFiles.exists(self.options.directory + "/" + zipName + ".zip") {
                zipName = "\(name)-\(suffix)"
                suffix += 1
            }
            let facts = """
                device: \(values["id"] ?? "?"), board \(values["board"] ?? "?"), connection session \(values["sid"] ?? "?")
                closed: recovered after an interrupted recording (the recorder did not stop cleanly); each file ends \
                at its last complete row
                """
            self.finish(directory: directory, start: start, zipPath: self.options.directory + "/" + zipName + ".zip",
                        facts: facts)
            self.counters.sessionsRecovered += 1
        }
    }

    /// `info.txt`'s list of the rows the gap policy filled, from the `fill=` lines of `session.txt`.
    static func fillListing(directory: String) -> String {
        let meta = (try? readFile(atPath: directory + "/session.txt", limit: 64 << 20)).map {
            String(decoding: $0, as: UTF8.self)
        } ?? ""
        var runs: [String: [String]] = [:]
        for line in meta.split(separator: "\n") where line.hasPrefix("fill=") {
            let parts = line.dropFirst(5).split(separator: ",")
            guard parts.count == 3, let row = Int(parts[1]), let count = Int(parts[2]), count > 0 else { continue }
            runs[String(parts[0]), default: []].append(count == 1 ? "\(row)" : "\(row)-\(row + count - 1)")
        }
        var text = "filled rows (0-based, counted after the header lines):\n"
        for file in ["ACC.csv", "BVP.csv", "EDA.csv", "TEMP.csv"] {
            text += "  \(file): \(runs[file].map { $0.joined(separator: " ") } ?? "none")\n"
        }
        return text
    }

    /// The text of `info.txt`.
    static func info(start: Int, maximumFill: Double, facts: String) -> String {
        """
        E4 connect session export written by empalinkctl record (EmpaLink Edge), from the wristband's MQTT streams.

        Every file except HR.csv starts at the same time T = \(start) (unix seconds, UTC): line 1.
        ACC.csv   T, T, T / 32.000000, 32.000000, 32.000000 / rows x,y,z: acceleration in 1/64 g, 32 Hz.
        BVP.csv   T / 64.000000 / rows: blood volume pulse (PPG, device counts), 64 Hz.
        EDA.csv   T / 4.000000 / rows: electrodermal activity in microsiemens, 4 Hz.
        TEMP.csv  T / 4.000000 / rows: skin temperature in degrees Celsius, 4 Hz.
        HR.csv    T+10 / 1.000000 / rows: heart rate in bpm, 1 Hz, computed by the recorder from BVP and ACC with
                  the edge's IBI engine; each second holds the latest estimate (before the first, the first).
        IBI.csv   T, IBI / rows t,ibi: seconds since T of the beat that ends the interval, interval in s, as the
                  edge published them.
        tags.csv  one unix time per button press; empty when none.
        Sample i of a sampled file was taken at T + i / rate (within half a sample period). A loss of at most
        \(DecimalText.upTo(maximumFill, 3)) s (BVP, ACC; \(DecimalText.upTo(4 * maximumFill, 3)) s for EDA and TEMP) is filled by
        linear interpolation (listed below); a longer one, or a disconnection, ends the session.

        \(facts)

        """
    }
}
