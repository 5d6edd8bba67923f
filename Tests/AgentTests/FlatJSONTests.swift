@testable import Agent
import Testing

/// The MQTT command parser (SPEC §10: malformed commands are answered with an error, never acted on).
@Suite struct FlatJSONTests {
    static func parse(_ text: String) -> Result<[String: FlatJSON.Value], FlatJSON.ParseError> {
        FlatJSON.parse(Array(text.utf8))
    }

    static func error(_ text: String) -> String? {
        if case .failure(let error) = Self.parse(text) { return error.message }
        return nil
    }

    @Test func acceptsTheCommands() throws {
        #expect(try Self.parse(#"{"mode":"background"}"#).get() == ["mode": .string("background")])
        #expect(try Self.parse(" {\t\"rescan\" :\ntrue\r} ").get() == ["rescan": .bool(true)])
        #expect(try Self.parse(#"{}"#).get() == [:])
        #expect(try Self.parse(#"{"a":false,"b":null,"c":-1.5e2,"d":0}"#).get()
                    == ["a": .bool(false), "b": .null, "c": .number(-150), "d": .number(0)])
    }

    @Test func decodesUnicodeEscapes() throws {
        #expect(try Self.parse(#"{"mode":"\u0062ackground"}"#).get() == ["mode": .string("background")])
        #expect(try Self.parse(#"{"k":"\ud83d\ude00 \u00e9\/\b\f\n\r\t"}"#).get()
                    == ["k": .string("😀 é/\u{08}\u{0C}\n\r\t")])
        // Raw UTF-8 passes through.
        #expect(try Self.parse(#"{"k":"ünï😀"}"#).get() == ["k": .string("ünï😀")])
    }

    @Test(arguments: [
        ("", "expected a JSON object"),
        ("[]", "expected a JSON object"),
        (#""mode""#, "expected a JSON object"),
        ("{", "expected a quoted key"),
        (#"{"mode""#, #"expected ':' after "mode""#),
        (#"{"mode":"#, #"missing value for "mode""#),
        (#"{"mode":"background""#, "expected ',' or '}'"),
        (#"{"mode":"background",}"#, "expected a quoted key"),
        (#"{mode:"background"}"#, "expected a quoted key"),
        (#"{'mode':'background'}"#, "expected a quoted key"),
        (#"{"mode":"background"}x"#, "unexpected bytes after the object"),
        (#"{"mode":"background"}{}"#, "unexpected bytes after the object"),
        (#"{"mode":"back"#, #"value of "mode": unterminated string"#),
        (#"{"mode":"a\qb"}"#, #"value of "mode": unknown escape '\q' in a string"#),
        (#"{"mode":"\u12"}"#, #"value of "mode": \u must be followed by 4 hex digits"#),
        (#"{"mode":"\ud83d"}"#, #"value of "mode": \u escape: a high surrogate without its low half"#),
        (#"{"mode":"\ud83d\u0041"}"#, #"value of "mode": \u escape: a high surrogate without its low half"#),
        (#"{"mode":"\ude00"}"#, #"value of "mode": \u escape: a low surrogate without its high half"#),
        ("{\"mode\":\"a\nb\"}", #"value of "mode": a control character in a string must be escaped"#),
        (#"{"mode":TRUE}"#, #"unsupported value for "mode" (objects and arrays are not commands)"#),
        (#"{"mode":tru}"#, #"unsupported value for "mode" (objects and arrays are not commands)"#),
    ])
    func malformedInputIsAnErrorWithItsReason(input: String, reason: String) {
        #expect(Self.error(input) == reason, "\(input)")
    }

    @Test(arguments: [
        #"{"mode":{"a":1}}"#, #"{"mode":["background"]}"#, #"{"a":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}"#,
        #"{"a":{"b":{"c":{}}}}"#,
    ])
    func nestingIsRefused(input: String) {
        #expect(Self.error(input)?.hasPrefix("unsupported value for") == true, "\(input)")
    }

    @Test(arguments: [
        // JSON's number grammar: no plus sign, leading zeros, bare points, hex, or overflow to infinity.
        "+1", "01", ".5", "1.", "1e", "1e+", "-", "--1", "1.2.3", "0x10", "1e999", "-1e999", "NaN", "Infinity",
    ])
    func numbersOutsideJSONsGrammarAreRefused(number: String) {
        #expect(Self.error(#"{"n":\#(number)}"#) != nil, "\(number) was accepted")
    }

    @Test(arguments: [("0", 0.0), ("-0", 0.0), ("12", 12), ("-1.25", -1.25), ("1e3", 1000), ("2.5E-1", 0.25)])
    func numbersInJSONsGrammarAreAccepted(number: String, value: Double) throws {
        #expect(try Self.parse(#"{"n":\#(number)}"#).get() == ["n": .number(value)])
    }

    @Test func duplicateKeysAreRefusedEvenWhenSpelledDifferently() {
        #expect(Self.error(#"{"mode":"background","mode":"resume"}"#) == #"duplicate key "mode""#)
        #expect(Self.error(#"{"mode":"background","\u006dode":"resume"}"#) == #"duplicate key "mode""#)
    }

    @Test func invalidUTF8IsRefused() {
        var bytes = Array(#"{"mode":""#.utf8)
        bytes += [0xC3, 0x28]  // a broken two-byte sequence
        bytes += Array(#""}"#.utf8)
        #expect(throws: FlatJSON.ParseError("value of \"mode\": a string is not valid UTF-8")) {
            try FlatJSON.parse(bytes).get()
        }
        var key = Array(#"{""#.utf8) + [0xFF] + Array(#"":1}"#.utf8)
        #expect(throws: FlatJSON.ParseError("key: a string is not valid UTF-8")) { try FlatJSON.parse(key).get() }
        key = [0xEF, 0xBB, 0xBF] + Array("{}".utf8)  // a byte-order mark is not JSON's whitespace
        #expect(throws: FlatJSON.ParseError("expected a JSON object")) { try FlatJSON.parse(key).get() }
    }

    @Test func hugeInputIsRefusedBeforeParsing() {
        let padding = String(repeating: " ", count: 4096)
        #expect(Self.error("{}" + padding) == "longer than 4096 bytes")
        #expect(Self.error(String(repeating: "[", count: 100_000)) == "longer than 4096 bytes")
        // Exactly at the limit is fine.
        #expect(Self.error("{}" + String(repeating: " ", count: 4094)) == nil)
    }

    @Test func longKeysAreCutShortInMessages() {
        let key = String(repeating: "k", count: 100)
        let message = Self.error(#"{"\#(key)":1,"\#(key)":2}"#)
        #expect(message == "duplicate key \"" + String(repeating: "k", count: 37) + "…\" (100 bytes)")
    }
}
