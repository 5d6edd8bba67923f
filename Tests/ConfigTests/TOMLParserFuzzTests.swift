import Config
import Testing
import TestSupport

/// Randomized robustness: 100 000 mutated documents from a fixed seed. Each must come back as a table or a
/// ``TOMLError`` (a trap would kill the test process, a hang would never finish), errors must sit inside the
/// document, and an accepted document must give the same result with CRLF line endings.
@Suite struct TOMLParserFuzzTests {
    /// splitmix64: tiny, deterministic, and good enough to spread mutations (no Foundation, no global state).
    /// Small seeds that together touch every construct, so that mutations land on every code path.
    static let seeds: [String] = [
        "a = 1\nb = \"two\"\n[t]\nc = [1, 2.5, true]\n",
        "[a.b]\nx = { y = 1, z.w = 'q' }\n[[a.c]]\nn = 0x1F\n[[a.c]]\nn = -0o7\n",
        "s = \"\"\"\nline \\\n  more \\u00e9\"\"\"\nl = '''\nraw\\n'''\n",
        "\"quoted key\".bare = 1e-3 # comment\nk = [ # c\n  1,\n  [2, 3],\n]\n",
        "f = [inf, -nan, +0.0, 1_000.5e+2]\ni = 9_223_372_036_854_775_807\nb = 0b1010\n",
        "[x]\ny.z = 1\n[x.y.w]\nv = false\n[[arr]]\n[arr.sub]\nq = \"\\U0001F600\"\n",
        "t = { a = [ { b = 1 } ], c = {} }\n'lit' = 'ünï'\n\"\" = \"\"\n",
        "# only a comment\r\nkey = \"crlf\"\r\n[tab]\r\nx=1\r\n",
    ]

    /// Characters with a meaning in TOML, inserted where the mutation falls.
    static let significant: [[UInt8]] = [
        "[", "]", "=", "\"", "'", "\\", ".", ",", "{", "}", "#", "\n", "\r", "\t", " ", "_", "+", "-", "e", "0",
        "\"\"\"", "'''", "[[", "]]", "\\u", "\\U", "inf", "nan", "true", "1979-05-27", "07:32", "é", "\u{2028}",
        "\u{FEFF}", "\u{0}", "\u{7F}",
    ].map { Array($0.utf8) }

    static func mutate(_ seed: [UInt8], random: inout SplitMix64) -> [UInt8] {
        var bytes = seed
        for _ in 0...random.below(4) {
            let at = random.below(bytes.count + 1)
            switch random.below(8) {
            case 0 where !bytes.isEmpty:  // replace a byte with any byte value (invalid UTF-8 included)
                bytes[min(at, bytes.count - 1)] = UInt8(truncatingIfNeeded: random.next())
            case 1 where !bytes.isEmpty:  // flip one bit
                bytes[min(at, bytes.count - 1)] ^= 1 << UInt8(random.below(8))
            case 2, 3:  // insert a significant character or token
                let token = TOMLParserFuzzTests.significant[random.below(TOMLParserFuzzTests.significant.count)]
                bytes.insert(contentsOf: token, at: at)
            case 4 where !bytes.isEmpty:  // delete a short run
                let end = min(bytes.count, at + 1 + random.below(3))
                bytes.removeSubrange(min(at, bytes.count - 1)..<end)
            case 5:  // truncate
                bytes.removeSubrange(at..<bytes.count)
            case 6:  // duplicate a line (duplicate keys and tables)
                let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
                let line = lines[random.below(lines.count)]
                bytes.insert(contentsOf: Array(line) + [0x0A], at: bytes.firstIndex(of: 0x0A).map { $0 + 1 } ?? 0)
            default:  // swap two lines
                var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
                if lines.count > 1 {
                    lines.swapAt(random.below(lines.count), random.below(lines.count))
                }
                bytes = Array(lines.joined(separator: [0x0A]))
            }
        }
        return bytes
    }

    @Test func hundredThousandMutatedDocumentsReturnATableOrAnError() {
        var random = SplitMix64(seed: 0x5EED_70B1)
        let seeds = TOMLParserFuzzTests.seeds.map { Array($0.utf8) }
        var accepted = 0
        var rejected = 0
        var problems: [String] = []
        for iteration in 0..<100_000 {
            let document = TOMLParserFuzzTests.mutate(seeds[iteration % seeds.count], random: &random)
            let lineCount = document.reduce(1) { $0 + ($1 == 0x0A ? 1 : 0) }
            do throws(TOMLError) {
                let table = try TOMLParser.parse(document)
                accepted += 1
                _ = table.tomlTestJSON.serialized()
                if !document.contains(0x0D) {
                    let crlf = Array(document.split(separator: 0x0A, omittingEmptySubsequences: false)
                        .joined(separator: [0x0D, 0x0A]))
                    let again = try? TOMLParser.parse(crlf)
                    if again?.tomlTestJSON != table.tomlTestJSON && problems.count < 10 {
                        problems.append("CRLF differs: \(document)")
                    }
                }
            } catch {
                rejected += 1
                // The position must name a character of the document, or the end of it.
                let inside = error.position.line <= lineCount
                    && TOMLTestSupport.offset(of: error.position, in: document) != nil
                if !inside && problems.count < 10 {
                    problems.append("\(error) outside the document: \(document)")
                }
                if (error.message.isEmpty || error.message.contains("\n")) && problems.count < 10 {
                    problems.append("not one line: \(error.message.debugDescription)")
                }
            }
        }
        #expect(problems.isEmpty, "\(problems)")
        #expect(accepted + rejected == 100_000)
        // Both outcomes must be common, or the mutations are not exercising the parser.
        #expect(accepted > 5_000, "accepted \(accepted)")
        #expect(rejected > 5_000, "rejected \(rejected)")
    }
}
