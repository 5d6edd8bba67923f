import Config
import Testing

/// Scalars, arrays and inline tables, each checked through the toml-test JSON the parser's result produces.
@Suite struct TOMLParserValueTests {
    private func json(_ text: String) throws -> String {
        try TOMLTestSupport.json(text)
    }

    private func string(_ value: String) -> String {
        #"{"s":{"type":"string","value":"\#(value)"}}"#
    }

    @Test func basicStringsDecodeEveryEscape() throws {
        #expect(try self.json(#"s = "a\b\t\n\f\r\"\\z""#) == self.string(#"a\b\t\n\f\r\"\\z"#))
        #expect(try TOMLParser.parse(#"s = "\u00e9\U0001F600\u0000""#)["s"]?.kind == .string("é😀\u{0}"))
        #expect(try TOMLParser.parse(#"s = "\U0010FFFF\uFFFD""#)["s"]?.kind == .string("\u{10FFFF}\u{FFFD}"))
    }

    @Test func literalStringsKeepBackslashes() throws {
        #expect(try TOMLParser.parse(#"s = 'C:\Users\n\u00e9'"#)["s"]?.kind == .string(#"C:\Users\n\u00e9"#))
        #expect(try TOMLParser.parse("s = 'tab\there'")["s"]?.kind == .string("tab\there"))
    }

    @Test func multilineBasicStringTrimsFirstNewlineAndJoinsBackslashLines() throws {
        let text = "s = \"\"\"\nline one\n  two \\\n\n     three\"\"\""
        #expect(try TOMLParser.parse(text)["s"]?.kind == .string("line one\n  two three"))
        #expect(try TOMLParser.parse("s = \"\"\"\\\n   \"\"\"")["s"]?.kind == .string(""))
    }

    @Test func multilineStringsAllowUpToTwoQuotesBeforeTheDelimiter() throws {
        let quotes = { (count: Int) in String(repeating: "\"", count: count) }
        #expect(try TOMLParser.parse("s = \(quotes(3))a\(quotes(4))")["s"]?.kind == .string("a\""))
        #expect(try TOMLParser.parse("s = \(quotes(3))a\(quotes(5))")["s"]?.kind == .string("a\"\""))
        #expect(try TOMLParser.parse("s = '''a'''''")["s"]?.kind == .string("a''"))
        #expect(try TOMLParser.parse("s = \(quotes(4))a\(quotes(4))")["s"]?.kind == .string("\"a\""))
    }

    @Test func multilineStringsNormaliseCRLFToLF() throws {
        #expect(try TOMLParser.parse("s = \"\"\"\r\na\r\nb\"\"\"")["s"]?.kind == .string("a\nb"))
        #expect(try TOMLParser.parse("s = '''a\r\nb'''")["s"]?.kind == .string("a\nb"))
    }

    @Test func emptyStringsOfEveryForm() throws {
        let table = try TOMLParser.parse("a = \"\"\nb = ''\nc = \"\"\"\"\"\"\nd = ''''''")
        for key in ["a", "b", "c", "d"] {
            #expect(table[key]?.kind == .string(""))
        }
    }

    @Test(arguments: [
        ("+99", 99), ("42", 42), ("0", 0), ("-17", -17), ("+0", 0), ("-0", 0), ("1_000", 1000),
        ("5_349_221", 5_349_221), ("0xDEADBEEF", 0xDEAD_BEEF), ("0xdead_beef", 0xDEAD_BEEF), ("0x00ff", 255),
        ("0o755", 0o755), ("0b1101_0110", 0b1101_0110), ("9223372036854775807", Int64.max),
        ("-9223372036854775808", Int64.min), ("0x7FFFFFFFFFFFFFFF", Int64.max),
        ("0o777777777777777777777", Int64.max),
    ] as [(String, Int64)])
    func integers(text: String, expected: Int64) throws {
        #expect(try TOMLParser.parse("i = \(text)")["i"]?.kind == .integer(expected))
    }

    @Test(arguments: [
        ("+1.0", 1.0), ("3.1415", 3.1415), ("-0.01", -0.01), ("5e+22", 5e22), ("1e06", 1e6), ("-2E-2", -0.02),
        ("6.626e-34", 6.626e-34), ("224_617.445_991_228", 224_617.445_991_228), ("1e1_0", 1e10),
        ("1.7976931348623157e308", Double.greatestFiniteMagnitude), ("5e-324", Double.leastNonzeroMagnitude),
        ("inf", Double.infinity), ("+inf", Double.infinity), ("-inf", -Double.infinity), ("0e0", 0),
    ] as [(String, Double)])
    func floats(text: String, expected: Double) throws {
        #expect(try TOMLParser.parse("f = \(text)")["f"]?.kind == .float(expected))
    }

    @Test func nanAndSignedZeroKeepTheirNature() throws {
        for text in ["nan", "+nan", "-nan"] {
            guard case .float(let value) = try TOMLParser.parse("f = \(text)")["f"]?.kind else {
                Issue.record("\(text) is not a float")
                continue
            }
            #expect(value.isNaN)
        }
        guard case .float(let zero) = try TOMLParser.parse("f = -0.0")["f"]?.kind else {
            Issue.record("-0.0 is not a float")
            return
        }
        #expect(zero == 0 && zero.sign == .minus)
    }

    @Test func booleans() throws {
        #expect(try self.json("t = true\nf = false")
            == #"{"t":{"type":"bool","value":"true"},"f":{"type":"bool","value":"false"}}"#)
    }

    @Test func arraysMayMixTypesSpanLinesAndEndWithAComma() throws {
        let text = "a = [ 1, \"two\", # comment\n  [3.5], { x = true },\n]\ne = [ ]"
        let expected = #"{"a":[{"type":"integer","value":"1"},{"type":"string","value":"two"},"#
            + #"[{"type":"float","value":"3.5"}],{"x":{"type":"bool","value":"true"}}],"e":[]}"#
        #expect(try self.json(text) == expected)
    }

    @Test func inlineTablesWithDottedKeysAndNesting() throws {
        let text = "t = { a.b = 1, a.c = { d = 'x' }, e = [] }"
        let expected = #"{"t":{"a":{"b":{"type":"integer","value":"1"},"c":{"d":{"type":"string","value":"x"}}},"#
            + #""e":[]}}"#
        #expect(try self.json(text) == expected)
        #expect(try self.json("t = {}") == #"{"t":{}}"#)
    }

    @Test func inlineTableValuesMaySpanLinesWhereTheValueAllows() throws {
        let table = try TOMLParser.parse("t = { a = [\n1,\n2,\n], s = \"\"\"\nx\"\"\" }")
        #expect(TOMLTestSupport.value(table, "t", "s")?.kind == .string("x"))
        guard case .array(let elements) = TOMLTestSupport.value(table, "t", "a")?.kind else {
            Issue.record("t.a is not an array")
            return
        }
        #expect(elements.map(\.kind) == [.integer(1), .integer(2)])
    }

    @Test func nestingUpToTheLimitIsAccepted() throws {
        let depth = TOMLParser.maximumNestingDepth
        let arrays = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        #expect(TOMLTestSupport.error("a = \(arrays)") == nil)
        let tooDeep = "[" + arrays + "]"
        #expect(TOMLTestSupport.error("a = \(tooDeep)")?.message.contains("nesting deeper than") == true)
    }

    @Test func deepNestingOfEveryKindIsAnErrorNotACrash() {
        let inline = "a = " + String(repeating: "{b = ", count: 10_000) + String(repeating: "}", count: 10_000)
        #expect(TOMLTestSupport.error(inline)?.message.contains("nesting deeper than 128") == true)
        let header = "[" + Array(repeating: "k", count: 10_000).joined(separator: ".") + "]"
        #expect(TOMLTestSupport.error(header)?.message.contains("nesting deeper than 128") == true)
        let dotted = Array(repeating: "k", count: 10_000).joined(separator: ".") + " = 1"
        #expect(TOMLTestSupport.error(dotted)?.message.contains("nesting deeper than 128") == true)
        let mixed = "a = " + String(repeating: "[{b = ", count: 5_000)
        #expect(TOMLTestSupport.error(mixed)?.message.contains("nesting deeper than 128") == true)
    }

    @Test func tomlTestJSONWritesFloatsForRoundTrip() throws {
        let table = try TOMLParser.parse("a = 0.1\nb = -inf\nc = nan\nd = 1e300\ne = -0.0")
        let expected = #"{"a":{"type":"float","value":"0.1"},"b":{"type":"float","value":"-inf"},"#
            + #""c":{"type":"float","value":"nan"},"d":{"type":"float","value":"1e+300"},"#
            + #""e":{"type":"float","value":"-0.0"}}"#
        #expect(table.tomlTestJSON.serialized() == expected)
    }
}
