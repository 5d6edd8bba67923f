import Config
import Foundation
import Testing

/// nio's `ByteToMessageDecoderVerifier` feeds a streaming decoder its input whole, byte by byte and split at every
/// boundary, and demands the same messages. Our parser takes a whole document, so "split at every byte" becomes
/// three properties over the valid corpus shared with the Python conformance test (Tests/integration/toml/valid):
///
/// 1. Every prefix, cut at every byte, either parses or fails with an error positioned inside the prefix (never
///    beyond what was read, never a trap); a cut inside a multi-byte UTF-8 sequence must fail as invalid UTF-8; and
///    a prefix that parses has every key and value position inside it. This is where truncation bugs live: a
///    lookahead past the end, a string that "closes" at the end of input, a position computed from stale state.
/// 2. The same document with CRLF instead of LF line endings gives the same values and the same positions
///    (CR is part of the line ending, never a column).
/// 3. Every position in the result points at what it describes (a quote or bare-key character for keys; the
///    first character of a scalar, `[`, `{` or the creating key for values), checked with line/column arithmetic
///    written independently of the parser.
@Suite struct TOMLParserSplitTests {
    static let corpusDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("integration/toml/valid")

    static let corpus: [(name: String, bytes: [UInt8])] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: TOMLParserSplitTests.corpusDirectory.path))
            ?? []
        return names.filter { $0.hasSuffix(".toml") }.sorted().compactMap { name in
            let url = TOMLParserSplitTests.corpusDirectory.appendingPathComponent(name)
            return (try? Data(contentsOf: url)).map { (name, Array($0)) }
        }
    }()

    @Test func corpusIsPresent() {
        #expect(TOMLParserSplitTests.corpus.count >= 40, "corpus at \(TOMLParserSplitTests.corpusDirectory.path)")
    }

    @Test(arguments: TOMLParserSplitTests.corpus.map(\.name))
    func everyPrefixParsesOrFailsInsideThePrefix(name: String) throws {
        let bytes = try #require(TOMLParserSplitTests.corpus.first { $0.name == name }?.bytes)
        #expect(TOMLTestSupport.error(bytes) == nil, "the whole document must parse")
        for cut in TOMLParserSplitTests.cuts(of: bytes) {
            let prefix = Array(bytes[..<cut])
            let end = TOMLTestSupport.endPosition(prefix)
            let splitsAScalar = cut < bytes.count && bytes[cut] & 0xC0 == 0x80
            do throws(TOMLError) {
                let table = try TOMLParser.parse(prefix)
                if splitsAScalar {
                    Issue.record("\(name): accepted a prefix cut inside a UTF-8 sequence at byte \(cut)")
                }
                // Plain comparisons: an `#expect` per value would dominate the run time.
                if let last = TOMLParserSplitTests.positions(table).max(), last >= end {
                    Issue.record("\(name)[..<\(cut)]: a key or value at \(last) is past the end \(end)")
                }
            } catch {
                if error.position > end {
                    Issue.record("\(name)[..<\(cut)]: \(error) is past the end \(end)")
                }
                if splitsAScalar && !error.message.hasPrefix("invalid UTF-8") {
                    Issue.record("\(name)[..<\(cut)]: \(error) instead of invalid UTF-8")
                }
            }
        }
    }

    @Test(arguments: TOMLParserSplitTests.corpus.map(\.name))
    func crlfAndLFLineEndingsGiveTheSameValuesAndPositions(name: String) throws {
        let bytes = try #require(TOMLParserSplitTests.corpus.first { $0.name == name }?.bytes)
        var lf: [UInt8] = []
        var crlf: [UInt8] = []
        var index = 0
        while index < bytes.count {
            if bytes[index] == 0x0D && index + 1 < bytes.count && bytes[index + 1] == 0x0A {
                index += 1
                continue
            }
            if bytes[index] == 0x0A {
                crlf.append(0x0D)
            }
            lf.append(bytes[index])
            crlf.append(bytes[index])
            index += 1
        }
        let lfTable = try TOMLParser.parse(lf)
        let crlfTable = try TOMLParser.parse(crlf)
        // JSON compares nan equal to nan, which `TOMLValue` equality (Double's) does not.
        #expect(lfTable.tomlTestJSON == crlfTable.tomlTestJSON)
        #expect(TOMLParserSplitTests.positions(lfTable) == TOMLParserSplitTests.positions(crlfTable))
    }

    @Test(arguments: TOMLParserSplitTests.corpus.map(\.name))
    func positionsPointAtWhatTheyDescribe(name: String) throws {
        let bytes = try #require(TOMLParserSplitTests.corpus.first { $0.name == name }?.bytes)
        let table = try TOMLParser.parse(bytes)
        let keyStarts = Set("\"'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        TOMLTestSupport.walk(table) { entry, value in
            if let entry {
                let at = TOMLTestSupport.offset(of: entry.keyPosition, in: bytes).map { bytes[$0] }
                #expect(at.map(keyStarts.contains) == true, "\(name): key \(entry.key) at \(entry.keyPosition)")
            }
            let allowed: Set<UInt8>
            switch value.kind {
            case .string: allowed = Set("\"'".utf8)
            case .integer, .float: allowed = Set("+-0123456789in".utf8)
            case .boolean: allowed = Set("tf".utf8)
            case .array: allowed = Set("[".utf8)
            case .table: allowed = keyStarts.union("[{".utf8)
            }
            let at = TOMLTestSupport.offset(of: value.position, in: bytes).map { bytes[$0] }
            #expect(at.map(allowed.contains) == true, "\(name): \(value.typeName) at \(value.position)")
        }
    }

    /// Every byte for documents up to 8 KiB. A larger document would cost O(n²) in a debug build, so it is cut at
    /// every byte of its first 2 KiB, both sides of its first 100 line endings, and at 200 points spread evenly.
    static func cuts(of bytes: [UInt8]) -> [Int] {
        if bytes.count <= 8192 {
            return Array(0...bytes.count)
        }
        var cuts = Array(0...2048)
        for (offset, byte) in bytes.enumerated() where byte == 0x0A && cuts.count < 2049 + 200 {
            cuts.append(offset)
            cuts.append(offset + 1)
        }
        cuts.append(contentsOf: stride(from: 0, through: bytes.count, by: max(1, bytes.count / 200)))
        cuts.append(bytes.count)
        return cuts
    }

    static func positions(_ table: TOMLTable) -> [SourcePosition] {
        var positions: [SourcePosition] = []
        TOMLTestSupport.walk(table) { entry, value in
            if let entry { positions.append(entry.keyPosition) }
            positions.append(value.position)
        }
        return positions
    }
}
