import Consumer
import Glibc
import Physio
import Posix

/// `empalinkctl ibi`: runs the streaming IBI engine (the same code as live) over an E4 connect export and writes
/// the emitted intervals in the E4 `IBI.csv` layout.
public enum IBICommand: CtlCommand {
    public static let name = "ibi"
    public static let summary = "compute inter-beat intervals offline from an E4 export (BVP.csv, ACC.csv)"
    public static let usage = """
        empalinkctl ibi --bvp BVP.csv [--acc ACC.csv] [--out IBI.csv] [--beats BEATS.csv] [--hr HR.csv]
                        [--hr-confidence-above C] [--hr-detail HRDETAIL.csv] [--filtered BVP.csv]
          --bvp FILE    E4 export of BVP (64 Hz): line 1 start unix time, line 2 rate, then samples
          --acc FILE    E4 export of ACC (32 Hz, 3 columns, 1/64 g): gates beats in motion
          --out FILE    IBI in the E4 layout ('<start>, IBI' then '<s since start>,<ibi s>'); default stdout
          --beats FILE  every detected beat: 't,ibi,reason,shape' (ibi empty and the reason when withheld;
                        shape = correlation with the template of recent pulses)
          --hr FILE     heart rate at 1 Hz in the E4 HR.csv layout (start, rate, then bpm; 0 = none)
          --hr-confidence-above C  keep in --hr only values whose confidence is above C (0 ... 1): 0.2 drops
                        the holds and weak peaks, 0.3 also the merged cadence peak, a new track's first
                        seconds in motion and the least concentrated peaks (Docs/ibi.md, Choosing a
                        confidence threshold); --hr-detail still lists every published value
          --hr-detail FILE  every published heart rate: 't,bpm,confidence,source' (source beats|spectral)
          --filtered FILE   the artefact-reduced BVP (accelerometer-referenced, as published live) in the
                        E4 BVP.csv layout
        """

    /// Parsed options.
    struct Options: Equatable {
        var bvp = ""
        var acc: String?
        var out: String?
        var beats: String?
        var hr: String?
        var hrDetail: String?
        var filtered: String?
        /// `--hr-confidence-above`: HR.csv keeps only values whose confidence is above this; nil keeps all.
        var hrConfidenceAbove: Double?
    }

    public static func run(arguments: [String]) -> Int32 {
        let options: Options
        switch Self.parse(arguments) {
        case .success(let parsed):
            options = parsed
        case .failure(let message):
            Console.err("ibi: \(message.text)")
            Console.err("usage: \(Self.usage)")
            return 2
        }
        let bvp: E4Export
        var acc: E4Export?
        do throws(E4ExportError) {
            bvp = try E4Export.read(path: options.bvp, columns: 1)
            if let path = options.acc {
                acc = try E4Export.read(path: path, columns: 3)
            }
        } catch {
            Console.err("ibi: \(error)")
            if case .unreadable = error { return 1 }
            return 2
        }
        let result = Self.process(bvp: bvp, acc: acc)
        let files: [(String?, String)] = [
            (options.out, Self.formatIBI(result, start: bvp.start)),
            (options.beats, Self.formatBeats(result, start: bvp.start)),
            (options.hr, Self.formatHeartRate(result, start: bvp.start, above: options.hrConfidenceAbove)),
            (options.hrDetail, Self.formatHeartRateDetail(result, start: bvp.start)),
            (options.filtered, Self.formatFiltered(result, start: bvp.start, rate: bvp.rate)),
        ]
        for case let (path?, text) in files {
            do throws(Errno) {
                try Self.write(text, to: path)
            } catch {
                Console.err("ibi: \(path): error: cannot write: \(error)")
                return 1
            }
        }
        if options.out == nil {
            Console.out(String(Self.formatIBI(result, start: bvp.start).dropLast()))
        }
        return 0
    }

    /// A usage error's message.
    struct UsageError: Error, Equatable {
        var text: String
    }

    static func parse(_ arguments: [String]) -> Result<Options, UsageError> {
        var options = Options()
        var bvp: String?
        var index = 0
        while index < arguments.count {
            let flag = arguments[index]
            guard ["--bvp", "--acc", "--out", "--beats", "--hr", "--hr-detail", "--filtered",
                   "--hr-confidence-above"].contains(flag) else {
                return .failure(UsageError(text: "unknown option '\(flag)'"))
            }
            let threshold = flag == "--hr-confidence-above"
            guard index + 1 < arguments.count, !arguments[index + 1].isEmpty else {
                return .failure(UsageError(text: threshold ? "\(flag) needs a number from 0 to 1"
                                                           : "\(flag) needs a file path"))
            }
            let value = arguments[index + 1]
            switch flag {
            case "--hr-confidence-above":
                guard let number = Double(value), number.isFinite, number >= 0, number <= 1 else {
                    return .failure(UsageError(text: "\(flag) needs a number from 0 to 1, not '\(value)'"))
                }
                options.hrConfidenceAbove = number
            case "--bvp": bvp = value
            case "--acc": options.acc = value
            case "--out": options.out = value
            case "--beats": options.beats = value
            case "--hr-detail": options.hrDetail = value
            case "--filtered": options.filtered = value
            default: options.hr = value
            }
            index += 2
        }
        guard let bvp else { return .failure(UsageError(text: "--bvp is required")) }
        options.bvp = bvp
        return .success(options)
    }

    /// Everything the engine produced over one export.
    struct Run: Sendable {
        var beats: [DetectedBeat] = []
        var heartRates: [HeartRateSample] = []
        /// The artefact-reduced BVP, one value per input sample (the input where the filter took none).
        var filtered: [Double] = []
    }

    /// Feeds the engine in time order, ACC samples up to each BVP sample's time first, as they arrive live.
    static func process(bvp: E4Export, acc: E4Export?) -> Run {
        var configuration = IBIConfiguration()
        configuration.bvpRate = bvp.rate
        if let acc { configuration.accRate = acc.rate }
        var engine = IBIEngine(configuration: configuration)
        var result = Run()
        var accIndex = 0
        for index in 0..<bvp.count {
            let time = bvp.time(of: index)
            if let acc {
                while accIndex < acc.count && acc.time(of: accIndex) <= time {
                    let base = accIndex * 3
                    engine.appendACC(x: acc.values[base], y: acc.values[base + 1], z: acc.values[base + 2],
                                     at: acc.time(of: accIndex))
                    accIndex += 1
                }
            }
            let output = engine.appendBVP(bvp.values[index], at: time)
            if let beat = output.beat { result.beats.append(beat) }
            if let heartRate = output.heartRate { result.heartRates.append(heartRate) }
            result.filtered.append(output.filteredBVP ?? bvp.values[index])
        }
        return result
    }

    static func formatIBI(_ result: Run, start: Double) -> String {
        var text = "\(DecimalText.fixed(start, 6)), IBI\n"
        for beat in result.beats {
            guard let interval = beat.interval else { continue }
            text += "\(DecimalText.fixed(beat.time - start, 6)),\(DecimalText.fixed(interval, 6))\n"
        }
        return text
    }

    static func formatBeats(_ result: Run, start: Double) -> String {
        var text = "t,ibi,reason,shape\n"
        for beat in result.beats {
            let interval = beat.interval.map { DecimalText.fixed($0, 6) } ?? ""
            let reason = beat.suppression.map { "\($0)" } ?? ""
            let shape = beat.templateCorrelation.map { DecimalText.fixed($0, 3) } ?? ""
            text += "\(DecimalText.fixed(beat.time - start, 6)),\(interval),\(reason),\(shape)\n"
        }
        return text
    }

    /// HR in the E4 `HR.csv` layout: one value per second from the first value kept; seconds without a value are 0.
    /// With `above`, only values whose confidence is above it are kept.
    static func formatHeartRate(_ result: Run, start: Double, above: Double? = nil) -> String {
        let kept = above.map { threshold in result.heartRates.filter { $0.confidence > threshold } } ?? result.heartRates
        guard let first = kept.first else { return "\(DecimalText.fixed(start, 6))\n1.000000\n" }
        var text = "\(DecimalText.fixed(first.time, 6))\n1.000000\n"
        var second = first.time
        for sample in kept {
            while second < sample.time - 0.5 {
                text += "0.00\n"
                second += 1
            }
            text += "\(DecimalText.fixed(sample.beatsPerMinute, 2))\n"
            second += 1
        }
        return text
    }

    /// Every published heart rate with its confidence and source: `t,bpm,confidence,source`, t in seconds since the
    /// export's start.
    static func formatHeartRateDetail(_ result: Run, start: Double) -> String {
        var text = "t,bpm,confidence,source\n"
        for sample in result.heartRates {
            text += "\(DecimalText.fixed(sample.time - start, 3)),\(DecimalText.fixed(sample.beatsPerMinute, 2)),"
                + "\(DecimalText.fixed(sample.confidence, 3)),\(sample.source)\n"
        }
        return text
    }

    /// The artefact-reduced BVP in the E4 `BVP.csv` layout.
    static func formatFiltered(_ result: Run, start: Double, rate: Double) -> String {
        var text = "\(DecimalText.fixed(start, 2))\n\(DecimalText.fixed(rate, 6))\n"
        for value in result.filtered { text += "\(DecimalText.fixed(value, 2))\n" }
        return text
    }

    /// Writes `text` to `path`, creating or truncating it.
    static func write(_ text: String, to path: String) throws(Errno) {
        let raw = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard raw >= 0 else { throw Errno.current }
        let fd = FileDescriptor(rawValue: raw)
        defer { fd.close() }
        try fd.writeAll(text)
    }
}
