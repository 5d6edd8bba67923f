@testable import CtlCommands
import Glibc
import Physio
import Testing
import TestSupport

@Suite struct IBICommandTests {
    func parse(_ text: String, columns: Int = 1) throws(E4ExportError) -> E4Export {
        try E4Export.parse(Array(text.utf8), path: "X.csv", columns: columns)
    }

    @Test func readsBVPAndACCExports() throws {
        let bvp = try self.parse("1680686620.00\n64.000000\n-0.00\n1.5\r\n\n-2.25\n")
        #expect(bvp.start == 1_680_686_620)
        #expect(bvp.rate == 64)
        #expect(bvp.values == [0, 1.5, -2.25])
        #expect(bvp.time(of: 2) == 1_680_686_620 + 2.0 / 64)
        let acc = try self.parse("1680686620.0, 1680686620.0, 1680686620.0\n32.0, 32.0, 32.0\n-34,-23,45\n1, 2 ,3\n",
                                 columns: 3)
        #expect(acc.rate == 32)
        #expect(acc.count == 2)
        #expect(acc.values == [-34, -23, 45, 1, 2, 3])
    }

    @Test func namesTheLineOfAMalformedFile() {
        #expect(throws: E4ExportError.badHeader(path: "X.csv", line: 1,
                                               expected: "the session start (unix seconds)")) {
            try self.parse("start\n64\n1\n")
        }
        #expect(throws: E4ExportError.badHeader(path: "X.csv", line: 2, expected: "the sample rate (Hz)")) {
            try self.parse("1680686620\n0\n1\n")
        }
        #expect(throws: E4ExportError.badValue(path: "X.csv", line: 4, text: "abc")) {
            try self.parse("1680686620\n64\n1\nabc\n")
        }
        #expect(throws: E4ExportError.badValue(path: "X.csv", line: 3, text: "nan")) {
            try self.parse("1680686620\n64\nnan\n")
        }
        #expect(throws: E4ExportError.wrongColumnCount(path: "X.csv", line: 3, expected: 3, found: 2)) {
            try self.parse("1680686620\n32\n1,2\n", columns: 3)
        }
        #expect(throws: E4ExportError.noSamples(path: "X.csv")) {
            try self.parse("1680686620\n64\n")
        }
        #expect(throws: E4ExportError.badHeader(path: "X.csv", line: 1, expected: "the session start")) {
            try self.parse("")
        }
    }

    func temporaryFile(_ contents: String) -> String {
        var template = Array("/tmp/empalink-ibi-test-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        let bytes = Array(contents.utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    @Test func exitsTwoOnMalformedInputAndUsageErrors() {
        let bad = self.temporaryFile("1680686620\n64\n1\n2\noops\n")
        defer { unlink(bad) }
        #expect(IBICommand.run(arguments: ["--bvp", bad]) == 2)
        #expect(IBICommand.run(arguments: []) == 2)
        #expect(IBICommand.run(arguments: ["--bvp"]) == 2)
        #expect(IBICommand.run(arguments: ["--bvp", bad, "--frobnicate", "x"]) == 2)
        #expect(IBICommand.run(arguments: ["--bvp", "/nonexistent/BVP.csv"]) == 1)
    }

    @Test func writesTheE4IBILayout() {
        // 40 s of a 75 bpm synthetic pulse.
        let pulse = SyntheticPulse(start: 1_680_686_620)
        let beats = pulse.beats(intervals: [Double](repeating: 0.8, count: 60))
        var text = "1680686620.00\n64.000000\n"
        for sample in pulse.samples(beats: beats, until: 40) { text += "\(sample.value)\n" }
        let bvp = self.temporaryFile(text)
        let out = self.temporaryFile("")
        defer {
            unlink(bvp)
            unlink(out)
        }
        #expect(IBICommand.run(arguments: ["--bvp", bvp, "--out", out]) == 0)
        let written = self.read(out).split(separator: "\n")
        #expect(written.first == "1680686620.000000, IBI")
        #expect(written.count > 10)
        for row in written.dropFirst() {
            let fields = row.split(separator: ",").compactMap { Double($0) }
            #expect(fields.count == 2)
            #expect(abs((fields.last ?? 0) - 0.8) < 0.02)
            #expect((fields.first ?? 0) > 20)
        }
    }

    @Test func parsesTheHeartRateConfidenceThreshold() {
        let parsed = try? IBICommand.parse(["--bvp", "B.csv", "--hr", "H.csv", "--hr-confidence-above", "0.2"]).get()
        #expect(parsed?.hrConfidenceAbove == 0.2)
        #expect((try? IBICommand.parse(["--bvp", "B.csv"]).get())?.hrConfidenceAbove == nil)
        for bad in ["1.5", "-0.1", "nan", "inf", "x", ""] {
            guard case .failure(let error) = IBICommand.parse(["--bvp", "B.csv", "--hr-confidence-above", bad]) else {
                Issue.record("'\(bad)' was accepted")
                continue
            }
            #expect(error.text.contains("a number from 0 to 1"))
        }
        #expect(IBICommand.run(arguments: ["--bvp", "B.csv", "--hr-confidence-above", "2"]) == 2)
    }

    @Test func heartRateFileKeepsOnlyValuesAboveTheThreshold() {
        var run = IBICommand.Run()
        run.heartRates = [
            HeartRateSample(time: 100, beatsPerMinute: 70),
            HeartRateSample(time: 101, beatsPerMinute: 90, confidence: 0.2, source: .spectral),
            HeartRateSample(time: 102, beatsPerMinute: 91, confidence: 0.55, source: .spectral),
            HeartRateSample(time: 104, beatsPerMinute: 92, confidence: 0.3, source: .spectral),
        ]
        #expect(IBICommand.formatHeartRate(run, start: 90)
                == "100.000000\n1.000000\n70.00\n90.00\n91.00\n0.00\n92.00\n")
        #expect(IBICommand.formatHeartRate(run, start: 90, above: 0.2)
                == "100.000000\n1.000000\n70.00\n0.00\n91.00\n0.00\n92.00\n")
        // The file starts at the first value kept.
        run.heartRates.removeFirst()
        #expect(IBICommand.formatHeartRate(run, start: 90, above: 0.3) == "102.000000\n1.000000\n91.00\n")
        #expect(IBICommand.formatHeartRate(run, start: 90, above: 1) == "90.000000\n1.000000\n")
    }

    func read(_ path: String) -> String {
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, 4096) }
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
