import Config
import Testing

/// Keys, tables, arrays of tables, document order and the positions the configuration validator reports.
@Suite struct TOMLParserTableTests {
    @Test func bareQuotedAndDottedKeys() throws {
        let text = """
            bare-key_1 = 1
            "quoted key" = 2
            'literal "key"' = 3
            "" = 4
            site."google.com" . 'x' = 5
            a . b	.c = 6
            1.2 = 7
            true = 8
            "ʎǝʞ" = 9
            """
        let table = try TOMLParser.parse(text)
        #expect(table.entries.map(\.key) == ["bare-key_1", "quoted key", #"literal "key""#, "", "site", "a", "1",
            "true", "ʎǝʞ"])
        #expect(TOMLTestSupport.value(table, "site", "google.com", "x")?.kind == .integer(5))
        #expect(TOMLTestSupport.value(table, "a", "b", "c")?.kind == .integer(6))
        #expect(TOMLTestSupport.value(table, "1", "2")?.kind == .integer(7))
    }

    @Test func headersCreateTablesAndImplicitParentsMayBeDefinedLater() throws {
        let text = """
            [x.y.z.w]
            a = 1
            [x]
            b = 2
            [x.y]
            c = 3
            """
        let expected = #"{"x":{"y":{"z":{"w":{"a":{"type":"integer","value":"1"}}},"#
            + #""c":{"type":"integer","value":"3"}},"b":{"type":"integer","value":"2"}}}"#
        #expect(try TOMLTestSupport.json(text) == expected)
    }

    @Test func headersMayAddSubTablesBeneathDottedKeyTables() throws {
        let text = "[fruit]\napple.color = 'red'\napple.taste.sweet = true\n[fruit.apple.texture]\nsmooth = true"
        let table = try TOMLParser.parse(text)
        #expect(TOMLTestSupport.value(table, "fruit", "apple", "texture", "smooth")?.kind == .boolean(true))
        #expect(TOMLTestSupport.value(table, "fruit", "apple", "taste", "sweet")?.kind == .boolean(true))
    }

    @Test func arraysOfTablesAppendAndSubTablesGoIntoTheLastElement() throws {
        let text = """
            [[fruits]]
            name = "apple"
            [fruits.physical]
            color = "red"
            [[fruits.varieties]]
            name = "red delicious"
            [[fruits.varieties]]
            name = "granny smith"
            [[fruits]]
            name = "banana"
            [[fruits.varieties]]
            name = "plantain"
            [[fruits]]
            """
        let table = try TOMLParser.parse(text)
        guard case .array(let fruits) = table["fruits"]?.kind, fruits.count == 3 else {
            Issue.record("fruits is not an array of three tables: \(String(describing: table["fruits"]))")
            return
        }
        guard case .table(let apple) = fruits[0].kind, case .table(let banana) = fruits[1].kind else {
            Issue.record("elements are not tables")
            return
        }
        #expect(TOMLTestSupport.value(apple, "physical", "color")?.kind == .string("red"))
        guard case .array(let varieties) = apple["varieties"]?.kind else {
            Issue.record("apple.varieties is not an array")
            return
        }
        #expect(varieties.count == 2)
        guard case .array(let bananaVarieties) = banana["varieties"]?.kind else {
            Issue.record("banana.varieties is not an array")
            return
        }
        #expect(bananaVarieties.count == 1)
        #expect(fruits[2].kind == .table(TOMLTable()))
    }

    @Test func entriesKeepDocumentOrder() throws {
        let table = try TOMLParser.parse("z = 1\na = 2\n[m]\n[b]\nk.j = 3\nk.a = 4")
        #expect(table.entries.map(\.key) == ["z", "a", "m", "b"])
        #expect(TOMLTestSupport.value(table, "b", "k").map { value -> [String] in
            guard case .table(let inner) = value.kind else { return [] }
            return inner.entries.map(\.key)
        } == ["j", "a"])
    }

    @Test func positionsPointAtKeysValuesAndHeaders() throws {
        let text = "# head\nport = 1883\n[mqtt]\n  tls.ca_file = \"ca.pem\"\nhosts = [\"a\", 'b']\n[[w]]\nx = { y = 1 }"
        let table = try TOMLParser.parse(text)
        let port = table.entry("port")
        #expect(port?.keyPosition == SourcePosition(line: 2, column: 1))
        #expect(port?.value.position == SourcePosition(line: 2, column: 8))
        let mqtt = table.entry("mqtt")
        #expect(mqtt?.keyPosition == SourcePosition(line: 3, column: 2))
        #expect(mqtt?.value.position == SourcePosition(line: 3, column: 1))
        guard case .table(let mqttTable) = mqtt?.value.kind else {
            Issue.record("mqtt is not a table")
            return
        }
        let tls = mqttTable.entry("tls")
        #expect(tls?.keyPosition == SourcePosition(line: 4, column: 3))
        #expect(tls?.value.position == SourcePosition(line: 4, column: 3))
        #expect(TOMLTestSupport.value(mqttTable, "tls", "ca_file")?.position == SourcePosition(line: 4, column: 17))
        guard case .array(let hosts) = mqttTable["hosts"]?.kind else {
            Issue.record("hosts is not an array")
            return
        }
        #expect(hosts.map(\.position) == [SourcePosition(line: 5, column: 10), SourcePosition(line: 5, column: 15)])
        #expect(table.entry("w")?.value.position == SourcePosition(line: 6, column: 1))
        #expect(table.entry("w")?.keyPosition == SourcePosition(line: 6, column: 3))
    }

    @Test func implicitTableTakesThePositionOfItsLaterHeader() throws {
        let table = try TOMLParser.parse("[a.b]\n\n[a]\n")
        #expect(table.entry("a")?.value.position == SourcePosition(line: 3, column: 1))
        #expect(table.entry("a")?.keyPosition == SourcePosition(line: 3, column: 2))
    }

    @Test func columnsCountUnicodeScalarsNotBytes() throws {
        let table = try TOMLParser.parse("\"日本\" = 'é'  \nk = \"🙂\" # ünï\nx = 1")
        #expect(table.entry("k")?.value.position == SourcePosition(line: 2, column: 5))
        let error = TOMLTestSupport.error("s = \"日本🙂\" x")
        #expect(error?.position == SourcePosition(line: 1, column: 11))
    }

    @Test func byteOrderMarkIsSkippedAndNotCounted() throws {
        let table = try TOMLParser.parse([0xEF, 0xBB, 0xBF] + Array("a = 1".utf8))
        #expect(table.entry("a")?.keyPosition == SourcePosition(line: 1, column: 1))
        #expect(table["a"]?.kind == .integer(1))
    }

    @Test func crlfLineEndingsAreLineEndings() throws {
        let table = try TOMLParser.parse("a = 1\r\n[t]\r\nb = [\r\n 2,\r\n] # c\r\n")
        #expect(TOMLTestSupport.value(table, "t", "b")?.position == SourcePosition(line: 3, column: 5))
    }

    @Test func emptyAndCommentOnlyDocumentsAreEmptyTables() throws {
        #expect(try TOMLParser.parse("") == TOMLTable())
        #expect(try TOMLParser.parse("# only\n\n  \t\n# comments") == TOMLTable())
    }

    @Test func dottedKeysMayExtendAnImplicitTableFromAnAncestorSection() throws {
        // Python's tomllib accepts this too; the implicit table becomes a dotted-key table.
        let table = try TOMLParser.parse("[a.b.c]\nx = 1\n[a]\nb.d = 2")
        #expect(TOMLTestSupport.value(table, "a", "b", "d")?.kind == .integer(2))
        #expect(TOMLTestSupport.error("[a.b.c]\n[a]\nb.d = 2\n[a.b]")?.message
            == "table [a.b] was already defined with dotted keys at 3:1")
    }
}
