#if canImport(Glibc)
import Glibc
#endif
import Consumer
import EventLoop
import Posix

/// `empalinkctl record`: every wristband session on the broker as an E4 connect session zip (SPEC §17.1).
public enum RecordCommand: CtlCommand {
    public static let name = "record"
    public static let summary = "record every wristband session on the broker as E4 connect session zips"
    public static let usage = """
        empalinkctl record --host H --port P [--prefix P] --out DIR [--config FILE] [--max-fill S]
        \(ConsumerSetup.commonUsage)
          --out DIR      where <start>_<ID>.zip files go (created if missing); sessions being recorded
                         grow in DIR/.partial and are closed at the next start after a crash
          --max-fill S   the longest loss (seconds, 0-5, default 1) filled by interpolation; a longer one
                         ends the session and starts a new one
        """

    public static func run(arguments: [String]) -> Int32 {
        let setup: ConsumerSetup
        switch ConsumerSetup.parse(arguments, switches: [], valued: ["--out", "--max-fill"]) {
        case .success(let parsed): setup = parsed
        case .failure(let message):
            Console.err("record: \(message.text)")
            Console.err("usage: \(Self.usage)")
            return 2
        }
        guard let out = setup.values["--out"] else {
            Console.err("record: --out is required")
            Console.err("usage: \(Self.usage)")
            return 2
        }
        var options = E4SessionRecorder.Options(directory: out)
        if let text = setup.values["--max-fill"] {
            guard let seconds = Double(text), (0...5).contains(seconds) else {
                Console.err("record: --max-fill must be a number of seconds in 0...5, got '\(text)'")
                return 2
            }
            options.maximumFillSeconds = seconds
        }
        let running: ConsumerSetup.Running
        switch setup.start(command: Self.name) {
        case .success(let value): running = value
        case .failure(let code): return code.code
        }
        let recorder: E4SessionRecorder
        do throws(Errno) {
            recorder = try E4SessionRecorder(options: options, logger: running.logger, heartRate: Self.heartRate)
        } catch {
            Console.err("record: error: \(out): cannot create the output directory: \(error)")
            return 1
        }
        if recorder.counters.sessionsRecovered > 0 {
            Console.err("record: closed \(recorder.counters.sessionsRecovered) session(s) left by an interrupted run")
        }
        running.client.onEvent = { event in
            if case .broker(let connected, let error) = event {
                Console.err(connected ? "record: broker connected" : "record: broker lost: \(error ?? "closed")")
            }
            recorder.handle(event, now: ConsumerClient.now)
        }
        do {
            try running.client.start()
            try running.loop.scheduleTimer(after: .seconds(1), repeating: .seconds(1)) {
                recorder.tick(now: ConsumerClient.now)
            }
        } catch {
            Console.err("record: error: \(error)")
            return 2
        }
        Console.err("record: recording into \(out)")
        running.loop.run()
        recorder.closeAll()
        let counters = running.client.counters
        Console.err("record: stopped: \(recorder.counters) mqtt_received=\(counters.received) "
                        + "malformed=\(counters.malformed) duplicates=\(counters.duplicates) gaps=\(counters.gaps) "
                        + "missing=\(counters.missing)")
        running.client.close()
        return recorder.counters.writeErrors > 0 ? 1 : 0
    }

    /// `HR.csv` of a session: the `Physio` engine over its BVP and ACC, as `empalinkctl ibi --hr` runs it, as a
    /// 1 Hz series from T+10 to the end of the BVP without holes (each second the latest estimate; before the
    /// first estimate the first; 0 when the engine gave none in the whole session).
    static func heartRate(directory: String, start: Int) -> String {
        let header = "\(DecimalText.fixed(Double(start + 10), 6))\n1.000000\n"
        guard let bvp = try? E4Export.read(path: directory + "/BVP.csv", columns: 1) else { return header }
        let acc = try? E4Export.read(path: directory + "/ACC.csv", columns: 3)
        let run = IBICommand.process(bvp: bvp, acc: acc)
        let end = bvp.start + Double(bvp.count) / bvp.rate
        var text = header
        var index = 0
        var current = run.heartRates.first?.beatsPerMinute ?? 0
        var second = Double(start + 10)
        while second < end {
            while index < run.heartRates.count && run.heartRates[index].time <= second + 0.5 {
                current = run.heartRates[index].beatsPerMinute
                index += 1
            }
            text += DecimalText.fixed(current, 2) + "\n"
            second += 1
        }
        return text
    }
}
