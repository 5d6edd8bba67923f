#if canImport(Glibc)
import Glibc
#endif
import Posix

/// The machine-readable side of the run: `empalink-bench --json PATH` writes every row, and the figures of the
/// data-path benchmarks as numbers, so a script (bench/daemon/run.py, CI) can compare runs without parsing the
/// table.
enum BenchReport {
    static func writeJSON(_ figures: [BenchRow], rows: [(String, String)], arguments: [String]) {
        guard let flag = arguments.firstIndex(of: "--json"), flag + 1 < arguments.count else { return }
        let path = arguments[flag + 1]
        var text = "{\n  \"rows\": [\n"
        text += rows.map { "    {\"benchmark\": \(Self.quoted($0.0)), \"result\": \(Self.quoted($0.1))}" }
            .joined(separator: ",\n")
        text += "\n  ],\n  \"figures\": {\n"
        text += figures.map { figure in
            "    \(Self.quoted(figure.key)): {\"value\": \(figure.value), \"unit\": \(Self.quoted(figure.unit))}"
        }.joined(separator: ",\n")
        text += "\n  }\n}\n"
        guard let file = fopen(path, "w") else {
            Console.err("empalink-bench: cannot write \(path): \(String(cString: strerror(errno)))")
            return
        }
        fputs(text, file)
        fclose(file)
        Console.out("empalink-bench: wrote \(path)")
    }

    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            default:
                if scalar.value < 0x20 { out += " " } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out + "\""
    }
}
