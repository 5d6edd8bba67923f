import Config
import Testing

/// Every class of error with its exact message and position: what the operator reads is part of the contract.
@Suite struct TOMLParserErrorTests {
    struct ErrorCase: Sendable, CustomTestStringConvertible {
        var document: String
        var line: Int
        var column: Int
        var message: String

        init(_ document: String, _ line: Int, _ column: Int, _ message: String) {
            self.document = document
            self.line = line
            self.column = column
            self.message = message
        }

        var testDescription: String { self.document.debugDescription }
    }

    static let cases: [ErrorCase] = [
        ErrorCase("port 1883", 1, 6,
            "expected '=' after key \"port\", found '1'"),
        ErrorCase("port = 1\nport = 2", 2, 1,
            "duplicate key \"port\" (first defined at 1:1)"),
        ErrorCase("[mqtt]\nx = 1\n\n[mqtt]", 4, 1,
            "table [mqtt] defined twice (first at 1:1)"),
        ErrorCase("i = 9223372036854775808", 1, 5,
            "integer 9223372036854775808 does not fit in 64 bits"),
        ErrorCase("i = -9223372036854775809", 1, 5,
            "integer -9223372036854775809 does not fit in 64 bits"),
        ErrorCase("i = 0x8000000000000000", 1, 5,
            "integer 0x8000000000000000 does not fit in 64 bits"),
        ErrorCase("i = 0123", 1, 5,
            "invalid number '0123': leading zeros are not allowed"),
        ErrorCase("i = 1__2", 1, 5,
            "invalid number '1__2': '_' must be between digits"),
        ErrorCase("i = +0x1", 1, 5,
            "invalid number '+0x1': hexadecimal, octal and binary integers cannot have a sign"),
        ErrorCase("i = 0o8", 1, 5,
            "invalid number '0o8': '8' is not a base-8 digit"),
        ErrorCase("f = 1.", 1, 5,
            "invalid number '1.': expected digits in the fraction after '.'"),
        ErrorCase("f = .5", 1, 5,
            "expected a value, found '.5'; strings need quotes, booleans are 'true' and 'false'"),
        ErrorCase("f = 1e", 1, 5,
            "invalid number '1e': expected digits in the exponent"),
        ErrorCase("f = nan1", 1, 5,
            "expected a value, found 'nan1'; strings need quotes, booleans are 'true' and 'false'"),
        ErrorCase("b = True", 1, 5,
            "expected a value, found 'True'; strings need quotes, booleans are 'true' and 'false'"),
        ErrorCase("s = \"\\q\"", 1, 6,
            "invalid escape sequence '\\q' in string; valid escapes are \\b \\t \\n \\f \\r \\\" \\\\ "
                + "\\uXXXX \\UXXXXXXXX"),
        ErrorCase("s = \"\\uD800\"", 1, 6,
            "invalid unicode escape: U+D800 is not a Unicode scalar value (surrogates and values above "
                + "U+10FFFF are not allowed)"),
        ErrorCase("s = \"\\u12\"", 1, 6,
            "invalid unicode escape: \\u needs 4 hexadecimal digits"),
        ErrorCase("s = \"abc", 1, 9,
            "unterminated string (opened at 1:5), found end of document"),
        ErrorCase("s = 'a\nb'", 1, 7,
            "unterminated literal string (opened at 1:5), found end of line; use ''' for multi-line strings"),
        ErrorCase("s = \"a\u{1}\"", 1, 7,
            "control character U+0001 is not allowed in a string; write it as \\u0001"),
        ErrorCase("s = \"\"\"abc", 1, 11,
            "unterminated multi-line string (opened at 1:5), found end of document"),
        ErrorCase("a = [1 2]", 1, 8,
            "expected ',' or ']' in array (opened at 1:5), found '2'"),
        ErrorCase("a = [1,,2]", 1, 8,
            "expected a value (string, number, boolean, array or inline table), found ','"),
        ErrorCase("t = {a = 1,}", 1, 12,
            "trailing comma is not allowed in an inline table (opened at 1:5)"),
        ErrorCase("t = {a = 1\n}", 1, 11,
            "expected ',' or '}' in inline table (opened at 1:5), found end of line; inline tables must be "
                + "on one line"),
        ErrorCase("t = {a = 1, a = 2}", 1, 13,
            "duplicate key \"a\" (first defined at 1:6)"),
        ErrorCase("t = {a = 1}\n[t]", 2, 1,
            "cannot extend inline table \"t\" defined at 1:5; inline tables are complete when written"),
        ErrorCase("t = {a = 1}\nt.b = 2", 2, 1,
            "cannot extend inline table \"t\" defined at 1:5; inline tables are complete when written"),
        ErrorCase("a = []\n[[a]]", 2, 1,
            "[[a]] cannot append to the static array \"a\" defined at 1:5; only arrays made with [[...]] "
                + "can be extended"),
        ErrorCase("[[a]]\n[a]", 2, 1,
            "table [a] was already defined as an array of tables at 1:1"),
        ErrorCase("[a]\n[[a]]", 2, 1,
            "[[a]] cannot append to \"a\": it is a table (defined at 1:1), not an array of tables"),
        ErrorCase("a.b.c = 1\n[a.b]", 2, 1,
            "table [a.b] was already defined with dotted keys at 1:3"),
        ErrorCase("[a.b]\nc = 1\n[a]\nb.d = 2", 4, 1,
            "dotted key \"b.d\" cannot add to table \"b\", which was defined by a table header at 1:1"),
        ErrorCase("a = 1\n[a.b]", 2, 2,
            "key \"a\" is already an integer (defined at 1:5), not a table"),
        ErrorCase("a = 1\na.b = 2", 2, 1,
            "key \"a\" is already an integer (defined at 1:5), not a table"),
        ErrorCase("[]", 1, 2,
            "expected a key, found ']'"),
        ErrorCase("[a", 1, 3,
            "expected ']' to close table header [a], found end of document"),
        ErrorCase("[[a]\n", 1, 5,
            "expected ']]' to close array-of-tables header [[a]], found end of line"),
        ErrorCase("[a] x", 1, 5,
            "expected end of line after table header [a], found 'x'"),
        ErrorCase("a = 1\rb = 2", 1, 6,
            "carriage return must be followed by a line feed (bare CR is not a line ending)"),
        ErrorCase("# c\u{1}", 1, 4,
            "control character U+0001 is not allowed in a comment"),
        ErrorCase("x = 1979-05-27", 1, 5,
            "date/time values are not supported in this configuration; quote the value as a string"),
        ErrorCase("x = 07:32:00", 1, 5,
            "date/time values are not supported in this configuration; quote the value as a string"),
        ErrorCase("x = [1979-05-27T07:32:00Z]", 1, 6,
            "date/time values are not supported in this configuration; quote the value as a string"),
        ErrorCase("\"\"\"k\"\"\" = 1", 1, 1,
            "a multi-line string cannot be a key"),
        ErrorCase("é = 1", 1, 1,
            "expected a key, found 'é' (U+00E9)"),
        ErrorCase("a = ", 1, 5,
            "expected a value, found end of document"),
        ErrorCase("a = 1 # c\n b = 2 c", 2, 8,
            "expected end of line after the value of \"b\", found 'c'"),
        ErrorCase("s = \"\"\"a\\ b\"\"\"", 1, 9,
            "invalid escape: a line-ending backslash may be followed only by whitespace on its line"),
        ErrorCase("[[t.a]]\n[t]\na.b = 1", 3, 1,
            "dotted key \"a.b\" cannot add to the array of tables \"a\" defined at 1:1"),
        ErrorCase("x = {a = {b = 1}, a.c = 2}", 1, 19,
            "cannot extend inline table \"a\" defined at 1:10; inline tables are complete when written"),
        ErrorCase("\"a\\u2028b\" = 1\n\"a\\u2028b\" = 2", 2, 1,
            "duplicate key \"a\\u2028b\" (first defined at 1:1)"),
    ]

    @Test(arguments: TOMLParserErrorTests.cases)
    func reportsMessageAndPosition(_ errorCase: ErrorCase) {
        let error = TOMLTestSupport.error(errorCase.document)
        #expect(error?.message == errorCase.message)
        #expect(error?.position == SourcePosition(line: errorCase.line, column: errorCase.column))
    }

    @Test func errorDescriptionIsLineColonColumnColonMessage() {
        #expect(TOMLTestSupport.error("a = 1\na = 2")?.description == "2:1: duplicate key \"a\" (first defined at 1:1)")
    }

    @Test(arguments: [
        ([0x61, 0x20, 0x3D, 0x20, 0x22, 0xFF, 0x22], SourcePosition(line: 1, column: 6)),  // a = "\xFF"
        ([0x23, 0x20, 0xC3, 0xA9, 0x0A, 0x23, 0xC0, 0xAF], SourcePosition(line: 2, column: 2)),  // overlong '/'
        ([0x23, 0xED, 0xA0, 0x80], SourcePosition(line: 1, column: 2)),  // UTF-8 encoded surrogate U+D800
        ([0x23, 0xF4, 0x90, 0x80, 0x80], SourcePosition(line: 1, column: 2)),  // above U+10FFFF
        ([0x23, 0xE2, 0x82], SourcePosition(line: 1, column: 2)),  // truncated sequence
        ([0x23, 0x80], SourcePosition(line: 1, column: 2)),  // stray continuation byte
    ] as [([UInt8], SourcePosition)])
    func invalidUTF8IsRejectedWhereItStarts(bytes: [UInt8], position: SourcePosition) {
        let error = TOMLTestSupport.error(bytes)
        #expect(error?.message.hasPrefix("invalid UTF-8") == true)
        #expect(error?.position == position)
    }

    @Test(arguments: [
        "1979-05-27T07:32:00Z", "1979-05-27 07:32:00-08:00", "1979-05-27T00:32:00.999999", "1979-05-27",
        "07:32:00", "00:32:00.999999",
    ])
    func dateTimeValuesAreRefusedAtTheValue(value: String) {
        let error = TOMLTestSupport.error("[t]\nwhen = \(value)")
        #expect(error == TOMLError(TOMLParser.dateTimeMessage, at: SourcePosition(line: 2, column: 8)))
    }

    @Test func controlCharactersAreRejectedInEveryStringFormAndComments() {
        for control in [0x00, 0x01, 0x08, 0x0B, 0x0C, 0x1F, 0x7F] as [UInt8] {
            for (open, close) in [("\"", "\""), ("'", "'"), ("\"\"\"", "\"\"\""), ("'''", "'''")] {
                let bytes = Array("s = \(open)a".utf8) + [control] + Array("b\(close)".utf8)
                #expect(TOMLTestSupport.error(bytes)?.message.hasPrefix("control character") == true,
                    "control \(control) in \(open)...\(close)")
            }
            #expect(TOMLTestSupport.error(Array("# a".utf8) + [control])?.message.hasPrefix("control character")
                == true)
        }
    }

    @Test func bareCarriageReturnIsRejectedEverywhere() {
        for text in ["a = 1\r", "\ra = 1", "# c\r", "s = \"\"\"a\rb\"\"\"", "s = '''a\rb'''", "a = [1,\r2]",
            "s = \"\"\"a\\\r  b\"\"\""]
        {
            #expect(TOMLTestSupport.error(text)?.message.hasPrefix("carriage return must be followed") == true,
                "\(text.debugDescription)")
        }
    }
}
